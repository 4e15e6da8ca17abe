"""Scripted ACP agent built on the official Python SDK (PyPI ``agent-client-protocol``).

Runs over stdio (``python py_sdk_agent.py``) inside the private venv made by
``tests/interop/_foreign.py``; it must never import acpstack.

Behaviour (identical to ``ts_agent.mjs``), chosen by the text of the first text
block of each ``session/prompt``:

* ``stream N``      N ``agent_message_chunk`` updates ``chunk-00000001 `` ... -> end_turn
* ``permission``    ``tool_call`` (call-1, "Edit file", edit, pending), then
                    ``session/request_permission`` with allow / allow-always / reject /
                    reject-always, then a chunk ``permission: selected <id>`` or
                    ``permission: cancelled`` and a ``tool_call_update`` (completed when an
                    allow option was chosen, failed otherwise) -> end_turn or cancelled
* ``read PATH [line=N] [limit=M]``  ``fs/read_text_file`` -> chunk ``read: <content>``
* ``write PATH TEXT``  ``fs/write_text_file`` (content = everything after the single
                    separator following PATH, verbatim) -> chunk ``wrote: PATH``
* ``wait``          chunk ``waiting``, then block until ``session/cancel`` -> cancelled
* anything else     chunk ``echo: <text>`` -> end_turn

A JSON-RPC error from the client becomes a chunk ``error: <code> <message>`` and the
turn still ends with end_turn.  A ``session/cancel`` received while a prompt runs
makes that prompt return ``cancelled`` whatever it was doing.
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from acp import RequestError, run_agent
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

AGENT_NAME = "py-sdk-agent"
SDK_VERSION = version("agent-client-protocol")

PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
]
_ALLOW_IDS = {o.option_id for o in PERMISSION_OPTIONS if o.kind.startswith("allow")}

_STREAM_RE = re.compile(r"stream\s+(\d+)\s*", re.ASCII)
_READ_RE = re.compile(r"read\s+(.+?)((?:\s+(?:line|limit)=\d+)*)\s*", re.ASCII | re.DOTALL)
_WRITE_RE = re.compile(r"write\s+(\S+)(?:\s(.*))?", re.ASCII | re.DOTALL)


@dataclass
class Turn:
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Session:
    cwd: str
    turns: list[Turn] = field(default_factory=list)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"error: {exc.code} {exc}"
    # Not a JSON-RPC error: e.g. the SDK rejected the client's response.
    return f"error: local {type(exc).__name__}: {exc}"


class ScriptedAgent:
    """Implements the ``acp.Agent`` protocol (snake_case keyword handlers)."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._sessions: dict[str, Session] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # ----------------------------------------------------------------- lifecycle

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(load_session=False),
            auth_methods=[],
            agent_info=Implementation(
                name=AGENT_NAME, title="Python SDK agent", version=SDK_VERSION
            ),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        session_id = f"py-{uuid.uuid4().hex}"
        self._sessions[session_id] = Session(cwd=cwd)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        for turn in session.turns:
            turn.cancelled.set()

    # ----------------------------------------------------------------- prompt

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        text = next((b.text for b in prompt if isinstance(b, TextContentBlock)), "")
        turn = Turn()
        session.turns.append(turn)
        try:
            stop = await self._run(session_id, turn, text)
        finally:
            session.turns.remove(turn)
        if turn.cancelled.is_set():
            stop = "cancelled"
        return PromptResponse(stop_reason=stop)

    async def _say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(
            session_id=session_id,
            update=AgentMessageChunk(
                session_update="agent_message_chunk",
                content=TextContentBlock(type="text", text=text),
            ),
        )

    async def _run(self, sid: str, turn: Turn, text: str) -> str:
        command = text.strip()
        if m := _STREAM_RE.fullmatch(command):
            for i in range(1, int(m.group(1)) + 1):
                if turn.cancelled.is_set():
                    return "cancelled"
                await self._say(sid, f"chunk-{i:08d} ")
            return "end_turn"
        if command == "permission":
            return await self._permission(sid)
        if command == "wait":
            await self._say(sid, "waiting")
            await turn.cancelled.wait()
            return "cancelled"
        if m := _READ_RE.fullmatch(command):
            opts = dict(kv.split("=", 1) for kv in m.group(2).split())
            kwargs = {k: int(v) for k, v in opts.items()}
            try:
                resp = await self._conn.read_text_file(session_id=sid, path=m.group(1), **kwargs)
            except Exception as exc:  # noqa: BLE001 - reported to the client
                await self._say(sid, _error_text(exc))
            else:
                await self._say(sid, f"read: {resp.content}")
            return "end_turn"
        if m := _WRITE_RE.fullmatch(text.lstrip()):
            path, content = m.group(1), m.group(2) or ""
            try:
                await self._conn.write_text_file(session_id=sid, path=path, content=content)
            except Exception as exc:  # noqa: BLE001
                await self._say(sid, _error_text(exc))
            else:
                await self._say(sid, f"wrote: {path}")
            return "end_turn"
        await self._say(sid, f"echo: {text}")
        return "end_turn"

    async def _permission(self, sid: str) -> str:
        await self._conn.session_update(
            session_id=sid,
            update=ToolCallStart(
                session_update="tool_call",
                tool_call_id="call-1",
                title="Edit file",
                kind="edit",
                status="pending",
            ),
        )
        try:
            resp = await self._conn.request_permission(
                session_id=sid,
                tool_call=ToolCallUpdate(
                    tool_call_id="call-1", title="Edit file", kind="edit", status="pending"
                ),
                options=PERMISSION_OPTIONS,
            )
        except Exception as exc:  # noqa: BLE001
            await self._say(sid, _error_text(exc))
            await self._tool_status(sid, "failed")
            return "end_turn"
        outcome = resp.outcome
        if outcome.outcome == "selected":
            await self._say(sid, f"permission: selected {outcome.option_id}")
            allowed = outcome.option_id in _ALLOW_IDS
            await self._tool_status(sid, "completed" if allowed else "failed")
            return "end_turn"
        await self._say(sid, "permission: cancelled")
        await self._tool_status(sid, "failed")
        return "cancelled"

    async def _tool_status(self, sid: str, status: str) -> None:
        await self._conn.session_update(
            session_id=sid,
            update=ToolCallProgress(
                session_update="tool_call_update", tool_call_id="call-1", status=status
            ),
        )


async def main() -> None:
    await run_agent(ScriptedAgent())


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
