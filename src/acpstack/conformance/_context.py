"""What a case works with: connections to the agent and the usual steps on them."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.conformance._client_sim import (
    EDITOR_CAPABILITIES,
    PermissionPolicy,
    SimulatedClient,
)
from acpstack.conformance._frames import Frame
from acpstack.conformance._model import CaseFail, CaseSkip
from acpstack.conformance._probe import ProbeLog, Reply
from acpstack.conformance._schema import MessageValidator
from acpstack.conformance._target import AgentTarget, Connection, open_connection

CLIENT_INFO = {"name": "acpstack-check", "title": "acpstack check", "version": "1"}
#: Update kinds that belong to a prompt turn (they must come before its answer).
TURN_UPDATES = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
UNSUPPORTED = -32022
NO_V1 = (
    "the agent does not speak protocol version 1 (-32022): the v1 cases cannot run "
    "(the v2 group checks a v2 conversation)"
)
README = "# Scratch workspace\n\nMade by `acpstack check agent`; removed when the check ends.\n"


@dataclass(frozen=True)
class CheckOptions:
    """How `check_agent` runs."""

    timeout: float = 20.0
    """Seconds each request may take to be answered."""
    startup_timeout: float = 60.0
    """Seconds a new agent process may take to answer its first request (it may load a
    model, an SDK, a runtime); measured once at the start and reported."""
    prompt: str = "Hello! Please answer with one short sentence."
    """The prompt of the cases that need a turn."""
    cancel_prompt: str = "Count slowly from 1 to 200, one number per line, explaining each."
    """The prompt of the cancellation cases (it should take a while)."""
    settle: float = 0.5
    """Seconds to watch for messages that should not come."""
    eof_grace: float = 5.0
    """Seconds an agent may take to exit after its stdin closed."""
    unstable: bool = False
    """Also check ACP's unstable methods (and run the unstable cases)."""
    only: tuple[str, ...] = ()
    """Run only these cases: ids, id prefixes or group names."""
    auth_method: str | None = None
    """Authenticate with this method id after `initialize` (`auth/login` in the v2 cases)."""
    user_state: bool = False
    """Run the agent with the user's own data directories (by default it gets temporary
    ones, so the check's sessions do not land in the user's store)."""
    proxy: bool = False
    """The target is a proxy-chain component: run the proxy cases (the others skip them)."""


@dataclass
class Turn:
    """One `session/prompt` and everything the agent wrote until (and just after) its answer."""

    session_id: str
    request: Frame
    reply: Reply
    during: list[Frame]
    late: list[Frame]
    cancel: Frame | None = None
    marker: Frame | None = None
    """A request sent right after `session/cancel`: answered before the prompt, it shows
    the agent read the cancel while the turn was still running."""

    @property
    def stop_reason(self) -> Any:
        result = self.reply.result
        return result.get("stopReason") if isinstance(result, dict) else None

    @property
    def updates(self) -> list[Frame]:
        return [f for f in self.during if f.method == "session/update"]

    def frames(self) -> list[Frame]:
        shown = [self.request, *self.during]
        if self.reply.frame is not None:
            shown.append(self.reply.frame)
        return shown + self.late


@dataclass
class Context:
    target: AgentTarget
    options: CheckOptions
    validator: MessageValidator
    logs: list[ProbeLog] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    _shared: Connection | None = None
    _scratch: list[Path] = field(default_factory=list)
    failed_init: str | None = None
    agent_info: dict[str, Any] | None = None
    case_id: str = ""  # the case running now
    #: the longest wait for a new process's first answer (the runner narrows the
    #: `--startup-timeout` once it has measured the agent's start-up)
    startup_allowance: float | None = None
    #: results one case computes and others of its group reuse (e.g. one prompt turn)
    memo: dict[str, Any] = field(default_factory=dict)

    # -- connections ------------------------------------------------------------------

    async def open(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        permission: PermissionPolicy = "reject",
        validate: bool = True,
    ) -> Connection:
        """A new connection (a new agent process on stdio, run in the target's `cwd`) with
        a fresh scratch workspace for its sessions; closed by the runner after the case. `validate=False`: the agent's messages are not
        checked against the v1 schema as they come (a case that negotiates another version
        checks them itself)."""
        workspace = Path(tempfile.mkdtemp(prefix="acpstack-check-"))
        (workspace / "README.md").write_text(README, "utf-8")
        self._scratch.append(workspace)
        caps = EDITOR_CAPABILITIES if capabilities is None else capabilities
        client = SimulatedClient(caps, workspace, permission, self.case_id)
        conn = await open_connection(
            self.target,
            client,
            self.validator if validate else None,
            shutdown_timeout=self.options.eof_grace + 0.5,
            startup_timeout=self.options.startup_timeout
            if self.startup_allowance is None
            else self.startup_allowance,
        )
        self.connections.append(conn)
        self.logs.append(conn.log)
        return conn

    async def ready(self, **kwargs: Any) -> Connection:
        """A new connection, initialized (and authenticated when asked)."""
        conn = await self.open(**kwargs)
        await self.handshake(conn)
        return conn

    async def shared(self) -> Connection:
        """The connection the cases of a group share; a new one if the agent went away."""
        if self.failed_init is not None:
            raise CaseSkip(self.failed_init)
        if self._shared is None or not self._shared.alive:
            conn = await self.open()
            try:
                await self.handshake(conn)
            except CaseSkip as exc:
                self.failed_init = str(exc)
                raise
            except CaseFail as exc:
                self.failed_init = f"the agent did not complete initialize: {exc}"
                raise CaseSkip(self.failed_init) from None
            self._shared = conn
        return self._shared

    async def handshake(self, conn: Connection, protocol_version: Any = 1) -> Reply:
        reply = await self.initialize(conn, protocol_version)
        if reply.status == "error" and reply.code == UNSUPPORTED and protocol_version == 1:
            raise CaseSkip(NO_V1)
        if reply.status != "result" or not isinstance(reply.result, dict):
            raise CaseFail(
                f"initialize got {reply.describe()}",
                self.show(conn, reply),
                timed_out=reply.status == "timeout",
            )
        conn.initialize = reply.result
        if self.options.auth_method:
            auth = await conn.request(
                "authenticate", {"methodId": self.options.auth_method}, timeout=self.options.timeout
            )
            if auth.status != "result":
                raise CaseFail(f"authenticate got {auth.describe()}", self.show(conn, auth))
        return reply

    async def initialize(self, conn: Connection, protocol_version: Any = 1) -> Reply:
        params = {
            "protocolVersion": protocol_version,
            "clientCapabilities": conn.client.capabilities,
            "clientInfo": CLIENT_INFO,
        }
        reply = await conn.request("initialize", params, timeout=self.options.timeout)
        info = reply.result.get("agentInfo") if isinstance(reply.result, dict) else None
        if self.agent_info is None and isinstance(info, dict):
            self.agent_info = info
        return reply

    async def close_all(self) -> None:
        for conn in self.connections:
            await conn.close(eof_grace=self.options.eof_grace)
        self.connections.clear()
        self._shared = None
        for path in self._scratch:
            shutil.rmtree(path, ignore_errors=True)
        self._scratch.clear()

    async def close_fresh(self) -> None:
        """Close the connections a case opened for itself (not the shared one)."""
        for conn in [c for c in self.connections if c is not self._shared]:
            await conn.close(eof_grace=self.options.eof_grace)
            self.connections.remove(conn)

    # -- steps --------------------------------------------------------------------------

    def workspace(self, conn: Connection) -> Path:
        return conn.client.workspace

    async def new_session(self, conn: Connection, **extra: Any) -> str:
        reply = await self.new_session_reply(conn, **extra)
        if reply.status == "error" and reply.code == -32000:
            raise CaseSkip(
                "the agent requires authentication (session/new answered -32000); "
                "rerun with --auth METHOD_ID"
            )
        result = reply.result
        if reply.status != "result" or not isinstance(result, dict):
            raise CaseSkip(f"needs a session, but session/new got {reply.describe()}")
        session_id = result.get("sessionId")
        if not isinstance(session_id, str):
            raise CaseSkip("needs a session, but session/new answered no string sessionId")
        return session_id

    async def new_session_reply(self, conn: Connection, **extra: Any) -> Reply:
        params = {"cwd": str(self.workspace(conn)), "mcpServers": [], **extra}
        return await conn.request("session/new", params, timeout=self.options.timeout)

    async def turn(
        self,
        conn: Connection,
        session_id: str,
        prompt: list[dict[str, Any]] | str | None = None,
        *,
        cancel: str | None = None,
        wait: float | None = None,
    ) -> Turn:
        """Send a prompt and collect what comes until its answer, then watch a little
        longer. `cancel` ("session" or "request") cancels the turn as soon as the agent
        shows activity for it; `wait` bounds the wait for the answer (default: the timeout)."""
        if prompt is None or isinstance(prompt, str):
            prompt = [{"type": "text", "text": prompt or self.options.prompt}]
        probe = conn.probe
        conn.client.turn_started(session_id)
        rid = probe.next_id()
        params = {"sessionId": session_id, "prompt": prompt}
        request = probe.send(
            {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}
        )
        cancel_frame = marker = None
        if cancel is not None:
            cancel_frame = await self._cancel_on_activity(conn, session_id, rid, request, cancel)
        if cancel_frame is not None and cancel == "session":
            marker = probe.send(
                {"jsonrpc": "2.0", "id": probe.next_id(), "method": "_acpstack/ping", "params": {}}
            )
        reply = await probe.reply(rid, timeout=wait or self.options.timeout)
        answered = reply.frame.seq if reply.frame is not None else probe.last_seq
        if reply.status in ("result", "error"):
            await probe.quiet(self.options.settle, limit=self.options.settle * 4)
        during = [f for f in probe.since(request.seq) if f.seq < answered]
        late = [f for f in probe.since(answered)] if reply.frame is not None else []
        return Turn(session_id, request, reply, during, late, cancel_frame, marker)

    async def _cancel_on_activity(
        self, conn: Connection, session_id: str, rid: int, request: Frame, how: str
    ) -> Frame | None:
        def activity(frame: Frame) -> bool:
            mine = frame.is_response and frame.message.get("id") == rid
            return mine or frame.session_id == session_id

        seen = await conn.probe.wait_for(activity, self.options.timeout, after=request.seq)
        if seen is None or seen.is_response:
            return None  # answered (or gone) before any sign of work: nothing to cancel
        if how == "session":
            # A permission request usually follows the tool call that showed the work: give
            # it `settle` to arrive, so the cancel finds it pending (cancel.permission).
            def asked(frame: Frame) -> bool:
                return frame.method == "session/request_permission" or (
                    frame.is_response and frame.message.get("id") == rid
                )

            await conn.probe.wait_for(asked, self.options.settle, after=request.seq)
            return conn.probe.notify("session/cancel", {"sessionId": session_id})
        return conn.probe.notify("$/cancel_request", {"requestId": rid})

    def show(self, conn: Connection, *replies: Reply, limit: int = 12) -> list[str]:
        """The frames behind `replies` (their requests and answers) for a report."""
        shown: list[str] = []
        for reply in replies:
            if reply.frame is not None:
                shown.append(reply.frame.show())
        if not conn.alive:
            shown.append(f"(the agent is gone: {conn.exit_description().splitlines()[0]})")
            shown += [f"   stderr: {line}" for line in conn.stderr_tail()]
        return shown[: limit + 12]

    def require_alive(self, conn: Connection, after: str) -> None:
        if not conn.alive:
            raise CaseFail(
                f"the agent went away after {after}",
                [
                    conn.exit_description().splitlines()[0],
                    *(f"stderr: {x}" for x in conn.stderr_tail()),
                ],
                expected="the agent keeps serving",
            )

    async def alive_check(self, conn: Connection, after: str) -> None:
        """The agent still answers a request after `after`."""
        self.require_alive(conn, after)
        reply = await conn.request("_acpstack/ping", {}, timeout=self.options.timeout)
        if reply.status in ("timeout", "closed"):
            raise CaseFail(
                f"the agent stopped answering after {after}: {reply.describe()}",
                self.show(conn, reply),
                expected="the agent keeps serving (any answer to a later request)",
                timed_out=reply.status == "timeout",
            )
