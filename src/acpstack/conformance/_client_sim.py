"""The client the checker plays: answers what the agent asks, within what it advertised.

It behaves like a careful editor: files are served from (and written to) the scratch
workspace only, terminals are simulated (no command the agent asks for is ever run),
permission requests are rejected (or held until the turn is cancelled, then answered
`cancelled` as the spec asks), and every call the advertised capabilities do not allow is
answered with an error and remembered as a violation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acpstack.conformance._frames import Frame, obj

PermissionPolicy = Literal["reject", "allow", "hold"]

EDITOR_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
}
NO_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
}
SIMULATED_OUTPUT = "(acpstack check simulates terminals: the command was not run)\n"
_TERMINAL_METHODS = frozenset(
    {"terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/kill"}
)

Answer = tuple[Literal["result", "error"], Any]
"""A `Responder`'s answer: ("result", the result) or ("error", the JSON-RPC error object)."""


def _error(code: int, message: str) -> Answer:
    return "error", {"code": code, "message": message}


@dataclass
class GateViolation:
    frame: Frame
    capability: str


@dataclass
class SimulatedClient:
    """The careful editor of the module doc: the `Responder` of the checker's probe.

    What the agent asked for is kept for the cases to judge: `gate_violations` (calls
    its capabilities did not allow), `custom_methods` (unknown methods without a `_`),
    `permission_requests` and `terminals` (id -> released?).
    """

    capabilities: dict[str, Any]
    workspace: Path
    permission: PermissionPolicy = "reject"
    label: str = ""  # the case that opened the connection
    gate_violations: list[GateViolation] = field(default_factory=list)
    custom_methods: list[Frame] = field(default_factory=list)
    permission_requests: list[Frame] = field(default_factory=list)
    #: terminal id -> released?
    terminals: dict[str, bool] = field(default_factory=dict)
    #: `proxy/successor` requests (a proxy under check forwarding to its successor)
    successor_requests: list[Frame] = field(default_factory=list)
    _held: dict[str, list[asyncio.Future[Answer]]] = field(default_factory=dict)
    #: sessions whose turn was cancelled: later permission requests of that turn are
    #: answered `cancelled` at once
    _cancelled: set[str] = field(default_factory=set)
    permission_asked: asyncio.Event = field(default_factory=asyncio.Event)

    async def answer(self, frame: Frame) -> Answer:
        """Answer the agent's request as the module doc says: files inside the scratch
        workspace, simulated terminals, permissions by the `permission` policy, and an
        error for everything not advertised."""
        method = frame.method or ""
        params = frame.params if isinstance(frame.params, dict) else {}
        gate = self._gate(method, params)
        if gate is not None:
            self.gate_violations.append(GateViolation(frame, gate))
            if method == "elicitation/create":
                return _error(-32602, f"the client did not advertise {gate}")
            return _error(-32601, f"the client did not advertise {gate}")
        if method == "session/request_permission":
            return await self._permission(frame, params)
        if method == "fs/read_text_file":
            return self._read(params)
        if method == "fs/write_text_file":
            return self._write(params)
        if method in _TERMINAL_METHODS or method == "terminal/release":
            return self._terminal(method, params)
        if method in ("proxy/successor", "_proxy/successor"):
            return self._successor(frame, params)
        if not method.startswith("_") and not method.startswith("$/"):
            self.custom_methods.append(frame)
        return _error(-32601, f"method not found: {method}")

    def _successor(self, frame: Frame, params: dict[str, Any]) -> Answer:
        """Be the successor of a proxy under check: answer its `initialize` like an agent."""
        self.successor_requests.append(frame)
        given = params.get("params")
        inner: dict[str, Any] = given if isinstance(given, dict) else {}
        if params.get("method") != "initialize":
            return _error(
                -32601, f"the check's successor only answers initialize, not {params.get('method')}"
            )
        return (
            "result",
            {
                "protocolVersion": inner.get("protocolVersion", 1),
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "acpstack-check-successor", "version": "1"},
            },
        )

    def turn_started(self, session_id: str) -> None:
        """A new prompt turn of `session_id`: its permission requests are answered again."""
        self._cancelled.discard(session_id)

    def cancel_session(self, session_id: str) -> None:
        """The turn of `session_id` was cancelled: pending permissions end `cancelled`."""
        self._cancelled.add(session_id)
        for future in self._held.pop(session_id, []):
            if not future.done():
                future.set_result(("result", {"outcome": {"outcome": "cancelled"}}))

    def release_held(self) -> None:
        """Answer every held permission request as cancelled (the connection is closing)."""
        for session in list(self._held):
            self.cancel_session(session)

    def _gate(self, method: str, params: dict[str, Any]) -> str | None:
        caps = self.capabilities
        fs = obj(caps.get("fs"))
        if method == "fs/read_text_file" and fs.get("readTextFile") is not True:
            return "fs.readTextFile"
        if method == "fs/write_text_file" and fs.get("writeTextFile") is not True:
            return "fs.writeTextFile"
        if method.startswith("terminal/") and caps.get("terminal") is not True:
            return "terminal"
        if method == "elicitation/create":
            mode = params.get("mode")
            modes = obj(caps.get("elicitation"))
            if not isinstance(mode, str) or modes.get(mode) is None:
                return f"elicitation.{mode}"
        return None

    async def _permission(self, frame: Frame, params: dict[str, Any]) -> Answer:
        self.permission_requests.append(frame)
        self.permission_asked.set()
        options = params.get("options")
        options = [o for o in options if isinstance(o, dict)] if isinstance(options, list) else []
        if str(params.get("sessionId")) in self._cancelled:
            return "result", {"outcome": {"outcome": "cancelled"}}
        if self.permission == "hold":
            future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            self._held.setdefault(str(params.get("sessionId")), []).append(future)
            return await future
        wanted = ("allow_once", "allow_always")
        if self.permission == "reject":
            wanted = ("reject_once", "reject_always")
        for kind in wanted:
            for option in options:
                if option.get("kind") == kind:
                    return "result", {
                        "outcome": {"outcome": "selected", "optionId": option.get("optionId")}
                    }
        if options:
            return "result", {
                "outcome": {"outcome": "selected", "optionId": options[0].get("optionId")}
            }
        return "result", {"outcome": {"outcome": "cancelled"}}

    def _inside(self, path: Any) -> Path | Answer:
        if not isinstance(path, str) or not Path(path).is_absolute():
            return _error(-32602, f"paths must be absolute, got {path!r}")
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.workspace.resolve()):
            return _error(-32602, f"{path} is outside the workspace")
        return resolved

    def _read(self, params: dict[str, Any]) -> Answer:
        target = self._inside(params.get("path"))
        if not isinstance(target, Path):
            return target
        try:
            lines = target.read_text("utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            return _error(-32002, f"resource not found: {params.get('path')}")
        except (OSError, UnicodeDecodeError) as exc:
            return _error(-32603, f"cannot read the file: {exc.__class__.__name__}")
        line, limit = params.get("line"), params.get("limit")
        start = max(line - 1, 0) if isinstance(line, int) else 0
        end = start + limit if isinstance(limit, int) else None
        return "result", {"content": "".join(lines[start:end])}

    def _write(self, params: dict[str, Any]) -> Answer:
        target = self._inside(params.get("path"))
        if not isinstance(target, Path):
            return target
        content = params.get("content")
        if not isinstance(content, str):
            return _error(-32602, "content must be a string")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, "utf-8")
        except OSError as exc:
            return _error(-32603, f"cannot write the file: {exc.__class__.__name__}")
        return "result", {}

    def _terminal(self, method: str, params: dict[str, Any]) -> Answer:
        if method == "terminal/create":
            created = f"simulated-{len(self.terminals) + 1}"
            self.terminals[created] = False
            return "result", {"terminalId": created}
        terminal_id = params.get("terminalId")
        if not isinstance(terminal_id, str) or self.terminals.get(terminal_id) is not False:
            return _error(-32602, f"unknown or released terminal {terminal_id!r}")
        if method == "terminal/release":
            self.terminals[terminal_id] = True
            return "result", {}
        if method == "terminal/output":
            status = {"exitCode": 0, "signal": None}
            return "result", {"output": SIMULATED_OUTPUT, "truncated": False, "exitStatus": status}
        if method == "terminal/wait_for_exit":
            return "result", {"exitCode": 0, "signal": None}
        return "result", {}  # terminal/kill
