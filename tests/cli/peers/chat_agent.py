"""An agent for the chat's tests, scripted by the prompt's first word:

- `long N`: a message of N numbered words (w00001 ...) streamed in 1 to 7 character chunks,
  laid out as paragraphs, a list, a code block, a table and one 300-character unbroken
  word, ending with the word END-OF-MESSAGE;
- `table`: `wide_tables()` streamed the same way: a 7-column table of numbered words with a
  file path in a cell, and a table with one long unbroken cell (`UNBROKEN_CELL`);
- `tools`: a tool call that goes pending, in progress, completed (with a checkpoint while it
  runs, see rendezvous.py, when RENDEZVOUS_READY is set), and one that fails;
- `diff`: an edit tool call with a diff, then a permission request for it;
- `ask N`: N permission requests (the answers are said in the message);
- `hang`: a client terminal running `sleep 600`, then waits until the turn is cancelled;
- `stubborn`: waits for ever, ignoring `session/cancel`;
- `fail`: an error answer to the prompt;
- `plan`, `usage`: a plan, a usage report; `think`: thoughts, then a message;
- `late`: ends the turn, then sends a session title half a second later;
- `form`: an elicitation form (name, a color choice, a yes/no, an age with a default);
  its answer is said back; `notice`: a warning notice;
- anything else: the prompt echoed back.

Every prompt, and the client's capabilities, MCP servers, mode and config changes, are
appended to $PEER_LOG (one JSON line each) when it is set. The session offers modes (ask,
code) and a boolean config option; `session/load` knows no session. With PEER_AUTH=1,
session/new needs `authenticate` with the method "key" first.
"""

from __future__ import annotations

import asyncio
import json
import os
import random

import msgspec

from acpstack import Agent, RequestError, serve_stdio
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError

LONG_WORD = "L" * 150 + "-unbroken-" + "M" * 140
#: A cell wider than any terminal the tests use (and its letter is found nowhere else).
UNBROKEN_CELL = "Q" * 230
TABLE_PATH = "/usr/local/lib/python3.12/site-packages/acpstack/cli/_render.py"


def long_message(count: int) -> str:
    words = [f"w{i:05d}" for i in range(1, count + 1)]
    parts: list[str] = []
    step = max(count // 6, 1)
    chunks = [words[i : i + step] for i in range(0, count, step)]
    for index, chunk in enumerate(chunks):
        kind = index % 4
        if kind == 0:
            parts.append(" ".join(chunk) + f" {LONG_WORD if index == 0 else ''}")
        elif kind == 1:
            parts.append("\n".join(f"- {word} item" for word in chunk))
        elif kind == 2:
            parts.append("```\n" + " ".join(chunk) + "\n```")
        else:
            parts.append("| a | b |\n|---|---|\n" + "\n".join(f"| {w} | x |" for w in chunk))
    return "\n\n".join(parts) + "\n\nEND-OF-MESSAGE\n"


def wide_tables() -> str:
    """A table wider than a narrow terminal (words w00001-w00026, a path in its last
    column), and one with a cell wider than any terminal; each cell must be on screen whole."""
    words = iter(f"w{i:05d}" for i in range(1, 27))
    rows = [[next(words) for _ in range(7)] for _ in range(3)]
    rows.append(["path", *(next(words) for _ in range(5)), TABLE_PATH])
    wide = "\n".join(
        [
            "| " + " | ".join(f"h{i}" for i in range(1, 8)) + " |",
            "|" + "---|" * 7,
            *("| " + " | ".join(row) + " |" for row in rows),
        ]
    )
    unbroken = f"| name | value |\n|---|---|\n| long | {UNBROKEN_CELL} |"
    return f"Wide table:\n\n{wide}\n\n{unbroken}\n\nEND-OF-TABLES\n"


class ChatAgent(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.cancelled: dict[str, asyncio.Event] = {}

    def log(self, **entry: object) -> None:
        if os.environ.get("PEER_LOG"):
            with open(os.environ["PEER_LOG"], "a") as log:
                log.write(json.dumps(entry) + "\n")

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        caps = params.client_capabilities
        self.log(fs=caps.fs.read_text_file if caps.fs else None, terminal=caps.terminal)
        response = acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=acp.AgentCapabilities(load_session=True),
            agent_info=acp.Implementation(name="chat-agent", version="1.0"),
        )
        if os.environ.get("PEER_AUTH"):
            response.auth_methods = [acp.AuthMethodAgent(id="key", name="API key")]
        return response

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        self.log(authenticate=params.method_id)
        self.authenticated = params.method_id == "key"
        return acp.AuthenticateResponse()

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        if os.environ.get("PEER_AUTH") and not getattr(self, "authenticated", False):
            raise RequestError.auth_required()
        self.log(mcp=[msgspec.to_builtins(server) for server in params.mcp_servers])
        modes = acp.SessionModeState(
            current_mode_id="ask",
            available_modes=[
                acp.SessionMode(id="ask", name="Ask"),
                acp.SessionMode(id="code", name="Code"),
            ],
        )
        option = acp.SessionConfigOption(
            id="verbose", name="Verbose", type="boolean", current_value=False
        )
        return acp.NewSessionResponse(
            session_id=f"s{os.getpid()}-{random.randrange(1 << 30)}",
            modes=modes,
            config_options=[option],
        )

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        raise RequestError.resource_not_found(params.session_id)

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        self.log(mode=params.mode_id)
        return acp.SetSessionModeResponse()

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        self.log(config={params.config_id: params.value})
        option = acp.SessionConfigOption(
            id="verbose", name="Verbose", type="boolean", current_value=params.value is True
        )
        return acp.SetSessionConfigOptionResponse(config_options=[option])

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        self.cancelled.setdefault(params.session_id, asyncio.Event()).set()

    async def say(self, session_id: str, text: str) -> None:
        await self.client.session_update(
            session_id, acp.AgentMessageChunk(content=acp.TextContent(text=text))
        )

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, acp.TextContent))
        links = [b.uri for b in params.prompt if isinstance(b, acp.ResourceLink)]
        self.log(text=text, links=links)
        verb, _, arg = text.strip().partition(" ")
        sid = params.session_id
        self.cancelled[sid] = asyncio.Event()
        handler = getattr(self, f"_{verb}", None)
        if handler is None:
            await self.say(sid, f"echo: {text}")
            return acp.PromptResponse(stop_reason="end_turn")
        return await handler(sid, arg)

    async def _long(self, sid: str, arg: str) -> acp.PromptResponse:
        return await self._send_chunked(sid, long_message(int(arg or "600")))

    async def _table(self, sid: str, arg: str) -> acp.PromptResponse:
        return await self._send_chunked(sid, wide_tables())

    async def _send_chunked(self, sid: str, message: str) -> acp.PromptResponse:
        """`message` in 1 to 7 character chunks."""
        rng = random.Random(7)
        at = 0
        while at < len(message):
            size = rng.randint(1, 7)
            await self.say(sid, message[at : at + size])
            at += size
        return acp.PromptResponse(stop_reason="end_turn")

    async def _tool(self, sid: str, tool_id: str, status: str, **fields: object) -> None:
        await self.client.session_update(
            sid,
            acp.SessionUpdateToolCallUpdate(tool_call_id=tool_id, status=status, **fields),  # type: ignore[arg-type]
        )

    async def _tools(self, sid: str, arg: str) -> acp.PromptResponse:
        await self.client.session_update(
            sid,
            acp.ToolCall(
                tool_call_id="t1", title="Build the thing", kind="execute", status="pending"
            ),
        )
        await self._tool(sid, "t1", "in_progress")
        if os.environ.get("RENDEZVOUS_READY"):
            from rendezvous import checkpoint

            await asyncio.to_thread(checkpoint, "tool-running")
        await self._tool(sid, "t1", "in_progress", title="Build the thing (step 2)")
        await self._tool(
            sid, "t1", "completed", content=[acp.Content(content=acp.TextContent(text="built OK"))]
        )
        await self.client.session_update(
            sid,
            acp.ToolCall(tool_call_id="t2", title="Check the thing", kind="read", status="pending"),
        )
        await self._tool(sid, "t2", "failed")
        await self.say(sid, "tools done")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _diff(self, sid: str, arg: str) -> acp.PromptResponse:
        diff = acp.Diff(path="/tmp/notes.txt", old_text="old line\n", new_text="NEW-LINE-MARK\n")
        call = acp.ToolCall(
            tool_call_id="d1", title="Edit notes", kind="edit", status="pending", content=[diff]
        )
        await self.client.session_update(sid, call)
        answer = await self.client.session_request_permission(
            acp.RequestPermissionRequest(
                session_id=sid,
                tool_call=acp.ToolCallUpdate(
                    tool_call_id="d1", title="Edit notes", kind="edit", content=[diff]
                ),
                options=_options(),
            )
        )
        await self._tool(sid, "d1", "completed", content=[diff])
        await self.say(sid, f"answer: {_outcome(answer)}")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _ask(self, sid: str, arg: str) -> acp.PromptResponse:
        for index in range(int(arg or "1")):
            answer = await self.client.session_request_permission(
                acp.RequestPermissionRequest(
                    session_id=sid,
                    tool_call=acp.ToolCallUpdate(
                        tool_call_id=f"a{index}", title=f"Act {index}", kind="edit"
                    ),
                    options=_options(),
                )
            )
            await self.say(sid, f"answer {index}: {_outcome(answer)}\n")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _hang(self, sid: str, arg: str) -> acp.PromptResponse:
        created = await self.client.terminal_create(
            acp.CreateTerminalRequest(session_id=sid, command="sleep", args=["600"])
        )
        await self.client.session_update(
            sid,
            acp.ToolCall(
                tool_call_id="h1",
                title="sleep 600",
                kind="execute",
                status="in_progress",
                content=[acp.Terminal(terminal_id=created.terminal_id)],
            ),
        )
        await self.say(sid, "hanging\n")
        await self.cancelled[sid].wait()
        return acp.PromptResponse(stop_reason="cancelled")

    async def _stubborn(self, sid: str, arg: str) -> acp.PromptResponse:
        await self.say(sid, "not stopping\n")
        await asyncio.Event().wait()  # ignores session/cancel: only the end of the connection
        return acp.PromptResponse(stop_reason="end_turn")

    async def _think(self, sid: str, arg: str) -> acp.PromptResponse:
        for part in ("weighing ", "the options"):
            await self.client.session_update(
                sid, acp.AgentThoughtChunk(content=acp.TextContent(text=part))
            )
        await self.say(sid, "decided")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _late(self, sid: str, arg: str) -> acp.PromptResponse:
        async def later() -> None:
            await asyncio.sleep(0.5)  # the agent's own timing: after the turn has ended
            await self.client.session_update(sid, acp.SessionInfoUpdate(title="LATE-TITLE"))

        self.later = asyncio.ensure_future(later())
        await self.say(sid, "see you")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _form(self, sid: str, arg: str) -> acp.PromptResponse:
        schema = acp.ElicitationSchema(
            properties={
                "name": acp.StringPropertySchema(title="Your name"),
                "color": acp.StringPropertySchema(
                    one_of=[
                        acp.EnumOption(const="r", title="Red"),
                        acp.EnumOption(const="g", title="Green"),
                    ]
                ),
                "agree": acp.BooleanPropertySchema(title="Agree"),
                "age": acp.IntegerPropertySchema(title="Age", default=30),
            },
            required=["name", "color"],
        )
        request = acp.CreateElicitationRequest(
            mode="form", message="Tell me about you", session_id=sid, requested_schema=schema
        )
        try:
            answer = await self.client.elicitation_create(request)
        except CapabilityError:
            await self.say(sid, "elicitation not offered")
            return acp.PromptResponse(stop_reason="end_turn")
        content = answer.content if isinstance(answer.content, dict) else None
        await self.say(sid, f"form: {answer.action} {json.dumps(content, sort_keys=True)}")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _notice(self, sid: str, arg: str) -> acp.PromptResponse:
        notice = acp.Notice(severity="warning", title="Rate limited", description="slowing down")
        await self.client.session_update(sid, notice)
        await self.say(sid, "noticed")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _fail(self, sid: str, arg: str) -> acp.PromptResponse:
        raise RequestError(-32000, "the model is unreachable")

    async def _plan(self, sid: str, arg: str) -> acp.PromptResponse:
        entries = [
            acp.PlanEntry(content="first step", priority="high", status="completed"),
            acp.PlanEntry(content="second step", priority="low", status="in_progress"),
        ]
        await self.client.session_update(sid, acp.Plan(entries=entries))
        await self.say(sid, "plan sent")
        return acp.PromptResponse(stop_reason="end_turn")

    async def _usage(self, sid: str, arg: str) -> acp.PromptResponse:
        await self.client.session_update(sid, acp.UsageUpdate(used=1234, size=8192))
        await self.say(sid, "usage sent")
        return acp.PromptResponse(stop_reason="end_turn")


def _options() -> list[acp.PermissionOption]:
    return [
        acp.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
        acp.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
    ]


def _outcome(answer: acp.RequestPermissionResponse) -> str:
    outcome = answer.outcome
    if isinstance(outcome, acp.SelectedPermissionOutcome):
        return outcome.option_id
    return "cancelled"


if __name__ == "__main__":
    serve_stdio(ChatAgent())
