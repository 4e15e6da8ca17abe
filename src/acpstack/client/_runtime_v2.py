"""How `ClientRuntime` speaks protocol version 2: the shapes its v2 calls and handlers
map (the methods themselves are in `_runtime.py`).

The runtime's calls keep their v1 signatures and results (v1's, see `_v2_results.py`);
on v2 they are sent in v2's shape:
- `load_session` is `session/resume` with `replayFrom: {type: "start"}`;
- `prompt` sends the prompt, which the agent acknowledges at once, and returns when the
  agent reports the turn's end (the idle `state_update` that follows it), with the stop
  reason as `PromptResponse.stop_reason`; a turn that ended with stop reason `error`
  raises the `RequestError` the agent reported, as a failed v1 prompt does;
- authentication is `auth/login`;
- what the agent asks (`session/request_permission` with a title and a subject,
  `elicitation/*`) goes to the same policies as on v1, in the model's shape.
- `cancel_tool_call` and `cancel_terminal` (v2 only) cancel one tool call or stop one
  agent terminal that advertises `capabilities.cancel`; the turn goes on.

v2 types load only here, for a v2 connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from acpstack.client import _v2_values as values
from acpstack.schema import convert
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from acpstack.schema import v2

log = logging.getLogger("acpstack.client")
_command_ids = itertools.count(1)


@dataclass
class TurnWait:
    """A `prompt` waiting for the end of its turn: the first idle state update after the
    agent reported `running` (which it must when the turn's work starts) or after it
    answered the prompt. An idle before both is a snapshot of earlier work."""

    done: asyncio.Future[tuple[str | None, Any]]
    started: bool = False  # running (or requires_action) reported since the prompt was sent
    acked: bool = False  # the prompt was answered (accepted)


def permission_request(params: v2.RequestPermissionRequest) -> acp.RequestPermissionRequest:
    """A v2 permission request as the model's: the question (`title`) is the tool call's
    title; a command subject is an `execute` tool call with the command as its input."""
    from acpstack.client import _v2_results as view
    from acpstack.schema import v2

    subject = params.subject
    call = acp.ToolCallUpdate(tool_call_id=f"permission-{next(_command_ids)}", title=params.title)
    if isinstance(subject, v2.ToolCallPermissionSubject):
        tool = subject.tool_call
        call.tool_call_id = tool.tool_call_id
        for name in ("raw_input", "raw_output"):
            if getattr(tool, name) is not UNSET:
                setattr(call, name, getattr(tool, name))
        if tool.kind is not UNSET:
            call.kind = values.tool_kind(tool.kind)
        if tool.status is not UNSET:
            call.status = values.tool_status(tool.status)
        if isinstance(tool.content, list):
            call.content = [view.tool_content(c) for c in tool.content]
        if isinstance(tool.locations, list):
            call.locations = [acp.ToolCallLocation(path=loc.path) for loc in tool.locations]
    elif isinstance(subject, v2.CommandPermissionSubject):
        if isinstance(subject.tool_call_id, str):
            call.tool_call_id = subject.tool_call_id
        call.kind = "execute"
        call.raw_input = {"command": subject.command, "cwd": subject.cwd}
    _check_unique_option_ids([o.option_id for o in params.options])  # before any is left out
    options = []
    for o in params.options:
        kind = values.permission_kind(o.kind)
        if kind is None:
            log.info("permission option %r left out: its kind %r is unknown", o.option_id, o.kind)
        else:
            options.append(acp.PermissionOption(option_id=o.option_id, name=o.name, kind=kind))
    return acp.RequestPermissionRequest(
        session_id=params.session_id, tool_call=call, options=options
    )


def _check_unique_option_ids(option_ids: Sequence[str]) -> None:
    """Two options with one optionId make any answer ambiguous (it could mean allow): refuse
    with -32602, as v1's `session_request_permission` does. Checked on the options as they
    came: leaving out those of an unknown kind must not hide a duplicate."""
    seen: set[str] = set()
    for option_id in option_ids:
        if option_id in seen:
            shown = option_id if len(option_id) <= 100 else option_id[:100] + "..."
            raise RequestError.invalid_params(
                {"path": "$.params.options", "optionId": shown},
                f"Duplicate permission optionId: {shown!r}",
            )
        seen.add(option_id)


def mcp_servers_to_v2(servers: Sequence[Any]) -> list[Any]:
    """MCP server configurations (v1's, as the runtime takes them) in v2's shape: every
    one has a `type`; SSE servers do not exist in v2 and are left out."""
    from acpstack.schema import v2

    out: list[Any] = []
    for server in servers:
        plain = msgspec.to_builtins(server) if isinstance(server, msgspec.Struct) else server
        if not isinstance(plain, dict) or plain.get("type", "stdio") not in ("stdio", "http"):
            continue
        out.append({"type": "stdio", **plain} if "type" not in plain else plain)
    return list(convert({"cwd": "/", "mcpServers": out}, v2.NewSessionRequest).mcp_servers or [])


def error_of(data: Any) -> RequestError:
    if isinstance(data, dict) and isinstance(data.get("code"), int):
        return RequestError(data["code"], str(data.get("message", "")), data.get("data"))
    return RequestError.internal_error({"reason": "the agent reported an error without details"})


__all__ = [
    "TurnWait",
    "mcp_servers_to_v2",
    "permission_request",
]
