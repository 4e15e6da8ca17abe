"""An acpstack Agent implementing every v1 agent method; prompts drive every client method."""

from __future__ import annotations

import asyncio
import sys

from acpstack import Agent, CapabilityError, RequestError, serve_stdio
from acpstack.schema import v1 as acp

MODES = [acp.SessionMode(id="code", name="Code"), acp.SessionMode(id="ask", name="Ask")]


def config(mode: str, verbose: bool) -> list[acp.SessionConfigOption]:
    return [
        acp.SessionConfigOption(
            id="mode",
            name="Mode",
            type="select",
            category="mode",
            current_value=mode,
            options=[acp.SessionConfigSelectOption(value=m.id, name=m.name) for m in MODES],
        ),
        acp.SessionConfigOption(
            id="verbose", name="Verbose", type="boolean", current_value=verbose
        ),
    ]


class FullAgent(Agent):
    def __init__(self) -> None:
        self.authenticated = False
        self.sessions: dict[str, dict[str, object]] = {}
        self.turns: dict[str, asyncio.Task[object]] = {}
        self.counter = 0

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        caps = acp.AgentCapabilities(
            load_session=True,
            prompt_capabilities=acp.PromptCapabilities(
                image=True, audio=True, embedded_context=True
            ),
            session_capabilities=acp.SessionCapabilities(
                list=acp.SessionListCapabilities(),
                delete=acp.SessionDeleteCapabilities(),
                resume=acp.SessionResumeCapabilities(),
                close=acp.SessionCloseCapabilities(),
            ),
            auth=acp.AgentAuthCapabilities(logout=acp.LogoutCapabilities()),
        )
        return acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=caps,
            agent_info=acp.Implementation(name="full-agent", version="1"),
            auth_methods=[acp.AuthMethodAgent(id="token", name="Token")],
        )

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        if params.method_id != "token":
            raise RequestError.invalid_params({"methodId": params.method_id})
        self.authenticated = True
        return acp.AuthenticateResponse()

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        self.authenticated = False
        return acp.LogoutResponse()

    def _auth(self) -> None:
        if not self.authenticated:
            raise RequestError.auth_required({"authMethods": [{"id": "token", "name": "Token"}]})

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        self._auth()
        self.counter += 1
        sid = f"s{self.counter:03d}"
        self.sessions[sid] = {"cwd": params.cwd, "mode": "code", "verbose": False, "history": []}
        return acp.NewSessionResponse(
            session_id=sid,
            modes=acp.SessionModeState(current_mode_id="code", available_modes=MODES),
            config_options=config("code", False),
        )

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        session = self._session(params.session_id)
        for update in session["history"]:  # type: ignore[attr-defined]
            await self.client.session_update(params.session_id, update)
        return acp.LoadSessionResponse(
            modes=acp.SessionModeState(current_mode_id=str(session["mode"]), available_modes=MODES)
        )

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        self._session(params.session_id)
        return acp.ResumeSessionResponse()

    async def session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        ids = sorted(self.sessions)
        start = int(params.cursor) if isinstance(params.cursor, str) else 0
        page = ids[start : start + 2]
        result = acp.ListSessionsResponse(
            sessions=[acp.SessionInfo(session_id=i, cwd=str(self.sessions[i]["cwd"])) for i in page]
        )
        if start + 2 < len(ids):
            result.next_cursor = str(start + 2)
        return result

    async def session_delete(self, params: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        self.sessions.pop(params.session_id, None)
        return acp.DeleteSessionResponse()

    async def session_close(self, params: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        turn = self.turns.get(params.session_id)
        if turn is not None:
            turn.cancel()
        return acp.CloseSessionResponse()

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        session = self._session(params.session_id)
        if params.mode_id not in {m.id for m in MODES}:
            raise RequestError.invalid_params({"modeId": params.mode_id})
        session["mode"] = params.mode_id
        return acp.SetSessionModeResponse()

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        session = self._session(params.session_id)
        if params.config_id == "verbose":
            session["verbose"] = params.value
        elif params.config_id == "mode":
            session["mode"] = params.value
        return acp.SetSessionConfigOptionResponse(
            config_options=config(str(session["mode"]), bool(session["verbose"]))
        )

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        turn = self.turns.get(params.session_id)
        if turn is not None:
            turn.cancel()

    def _session(self, sid: str) -> dict[str, object]:
        if sid not in self.sessions:
            raise RequestError.resource_not_found(sid)
        return self.sessions[sid]

    async def send(self, sid: str, update: acp.SessionUpdate) -> None:
        self.sessions[sid]["history"].append(update)  # type: ignore[attr-defined]
        await self.client.session_update(sid, update)

    async def say(self, sid: str, text: str) -> None:
        await self.send(sid, acp.AgentMessageChunk(content=acp.TextContent(text=text)))

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        sid = params.session_id
        self._session(sid)
        self.turns[sid] = asyncio.current_task()  # type: ignore[assignment]
        try:
            return await self._turn(sid, params)
        except asyncio.CancelledError:
            return acp.PromptResponse(stop_reason="cancelled")
        finally:
            self.turns.pop(sid, None)

    async def _turn(self, sid: str, params: acp.PromptRequest) -> acp.PromptResponse:
        first = params.prompt[0]
        text = first.text if isinstance(first, acp.TextContent) else ""
        verb, _, arg = text.partition(" ")
        c = self.client
        try:
            if verb == "updates":
                await self.send(
                    sid,
                    acp.UserMessageChunk(
                        content=acp.TextContent(text="user says"), message_id="u1"
                    ),
                )
                await self.send(
                    sid,
                    acp.AgentThoughtChunk(
                        content=acp.TextContent(text="thinking"), message_id="t1"
                    ),
                )
                await self.send(
                    sid,
                    acp.AgentMessageChunk(content=acp.TextContent(text="answer"), message_id="a1"),
                )
                await self.send(
                    sid,
                    acp.ToolCall(
                        tool_call_id="tc",
                        title="Read",
                        kind="read",
                        status="pending",
                        locations=[acp.ToolCallLocation(path="/x", line=3)],
                    ),
                )
                await self.send(
                    sid,
                    acp.SessionUpdateToolCallUpdate(
                        tool_call_id="tc",
                        status="completed",
                        content=[acp.Content(content=acp.TextContent(text="ok"))],
                    ),
                )
                await self.send(
                    sid,
                    acp.Plan(
                        entries=[acp.PlanEntry(content="step", priority="high", status="pending")]
                    ),
                )
                await self.send(
                    sid,
                    acp.AvailableCommandsUpdate(
                        available_commands=[acp.AvailableCommand(name="go", description="Go")]
                    ),
                )
                await self.send(sid, acp.CurrentModeUpdate(current_mode_id="ask"))
                await self.send(sid, acp.ConfigOptionUpdate(config_options=config("ask", True)))
                await self.send(
                    sid, acp.SessionInfoUpdate(title="Titled", updated_at="2026-11-22T00:00:00Z")
                )
                await self.send(
                    sid,
                    acp.UsageUpdate(used=10, size=100, cost=acp.Cost(amount=0.5, currency="EUR")),
                )
            elif verb == "fs":
                await c.fs_write_text_file(
                    acp.WriteTextFileRequest(session_id=sid, path=arg, content="a\nb\nc\n")
                )
                read = await c.fs_read_text_file(
                    acp.ReadTextFileRequest(session_id=sid, path=arg, line=2, limit=1)
                )
                await self.say(sid, f"read={read.content!r}")
            elif verb == "terminal":
                created = await c.terminal_create(
                    acp.CreateTerminalRequest(
                        session_id=sid,
                        command=sys.executable,
                        args=["-c", "print('out'); import time; time.sleep(30)"],
                    )
                )
                tid = created.terminal_id
                for _ in range(200):
                    out = await c.terminal_output(
                        acp.TerminalOutputRequest(session_id=sid, terminal_id=tid)
                    )
                    if "out" in out.output:
                        break
                    await asyncio.sleep(0.02)
                await c.terminal_kill(acp.KillTerminalRequest(session_id=sid, terminal_id=tid))
                exit_status = await c.terminal_wait_for_exit(
                    acp.WaitForTerminalExitRequest(session_id=sid, terminal_id=tid)
                )
                out = await c.terminal_output(
                    acp.TerminalOutputRequest(session_id=sid, terminal_id=tid)
                )
                await c.terminal_release(
                    acp.ReleaseTerminalRequest(session_id=sid, terminal_id=tid)
                )
                try:
                    await c.terminal_output(
                        acp.TerminalOutputRequest(session_id=sid, terminal_id=tid)
                    )
                    released = "still there"
                except RequestError as err:
                    released = str(err.code)
                await self.say(
                    sid,
                    f"output={out.output.strip()} signal={exit_status.signal} exit={out.exit_status.signal if out.exit_status else None} released={released}",
                )  # type: ignore[union-attr]
            elif verb == "permission":
                options = [
                    acp.PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                    acp.PermissionOption(option_id="no", name="No", kind="reject_once"),
                ]
                answer = await c.session_request_permission(
                    acp.RequestPermissionRequest(
                        session_id=sid,
                        tool_call=acp.ToolCallUpdate(tool_call_id="p1", title="Do"),
                        options=options,
                    )
                )
                outcome = answer.outcome
                await self.say(
                    sid,
                    outcome.option_id
                    if isinstance(outcome, acp.SelectedPermissionOutcome)
                    else "cancelled",
                )
            elif verb == "elicit":
                schema = acp.ElicitationSchema(
                    properties={"name": acp.StringPropertySchema(title="Name")}, required=["name"]
                )
                answer = await c.elicitation_create(
                    acp.CreateElicitationRequest(
                        message="Who?", mode="form", requested_schema=schema, session_id=sid
                    )
                )
                await c.elicitation_complete(
                    acp.CompleteElicitationNotification(elicitation_id="e1")
                )
                await self.say(sid, f"{answer.action}:{answer.content}")
            elif verb == "wait":
                await self.say(sid, "waiting")
                await asyncio.Event().wait()
            elif verb == "ext":
                result = await c.ext_method("_test/client_ping", {"n": 1})
                await c.ext_notification("_test/client_note", {"n": 2})
                await self.say(sid, f"ext={result}")
        except CapabilityError as exc:
            await self.say(sid, f"capability error: {exc}")
        return acp.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: object) -> object:
        if method == "_test/ping":
            return {"pong": params}
        raise RequestError.method_not_found(method)


class MinimalAgent(Agent):
    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="only")


if __name__ == "__main__":
    serve_stdio(MinimalAgent() if sys.argv[1:] == ["minimal"] else FullAgent())
