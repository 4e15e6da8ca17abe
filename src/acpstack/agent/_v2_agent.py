"""How `SessionAgent` speaks protocol version 2 (its `v2_*` handlers are in `_runtime.py`,
over the same sessions, store and turns as v1): the shapes mapped here.

What v2 changes for the agent:
- `initialize` answers `info` and one `capabilities` (sessions under `session`);
- `auth/login` and `auth/logout` instead of `authenticate` and `logout`;
- `session/prompt` answers at once with the user message's id; the turn runs on, reported
  by `state_update` (running, requires_action, idle with the stop reason, or `error`
  with the error object when the turn failed);
- `session/resume` with `replayFrom: {type: "start"}` instead of `session/load`;
- modes are the config option of category "mode";
- no client file system or terminals: `Turn` does that work on the agent's machine;
- `tool_call/cancel` and `terminal/cancel` cancel one tool call or command (`_cancel.py`).

v2 types load only when a connection negotiates version 2 (imported in the handlers).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from acpstack.schema import v1 as acp
from acpstack.wire import RESOURCE_NOT_FOUND, RequestError

if TYPE_CHECKING:
    from acpstack.agent._session import Session
    from acpstack.agent._v2_session import V2Session

log = logging.getLogger("acpstack.agent")


def _v2(session: Session) -> V2Session:
    from acpstack.agent._v2_session import V2Session

    assert isinstance(session, V2Session), "a v2 handler got a session of a v1 connection"
    return session


def session_not_found(session_id: str) -> RequestError:
    """v2's answer for an unknown session: -32002 with `{sessionId}`."""
    return RequestError(
        RESOURCE_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id}
    )


def prompt_from_v2(blocks: Sequence[Any]) -> list[acp.ContentBlock]:
    """A v2 prompt as the turn's content blocks (the same five kinds; a kind v2 added
    later is left out, and said so in the log)."""
    out: list[acp.ContentBlock] = []
    for block in blocks:
        plain = msgspec.to_builtins(block) if isinstance(block, msgspec.Struct) else block
        try:
            out.append(msgspec.convert(plain, acp.ContentBlock))
        except msgspec.ValidationError:
            log.warning("left out a prompt block of an unknown kind: %.80r", plain)
    return out


def mcp_servers_from_v2(servers: Any) -> list[Any]:
    """v2 MCP server configurations as the v1 ones the MCP connections take (stdio and
    http; `args`, `env` and `headers` are optional in v2)."""
    out: list[Any] = []
    for server in servers if isinstance(servers, list) else []:
        plain = msgspec.to_builtins(server) if isinstance(server, msgspec.Struct) else server
        if not isinstance(plain, dict):
            continue
        kind = plain.get("type")
        if kind == "stdio":
            plain = {k: v for k, v in plain.items() if k != "type"}
            plain.setdefault("args", [])
            plain.setdefault("env", [])
        elif kind == "http":
            plain.setdefault("headers", [])
        else:
            raise RequestError.invalid_params(
                {"mcpServers": {"type": kind}}, f"Unsupported MCP server type: {kind!r}"
            )
        out.append(plain)
    # (decoded as v1's session/new decodes them: stdio and http have their own structs)
    return list(msgspec.convert({"cwd": "/", "mcpServers": out}, acp.NewSessionRequest).mcp_servers)


__all__ = ["mcp_servers_from_v2", "prompt_from_v2", "session_not_found"]
