"""What `SessionAgent` checks and converts in session requests and answers."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


def with_fork(result: acp.InitializeResponse) -> Any:
    """The same answer in the unstable types, advertising unstable `session/fork`."""
    from acpstack.schema import v1_unstable as acpu

    unstable = msgspec.json.decode(msgspec.json.encode(result), type=acpu.InitializeResponse)
    caps = unstable.agent_capabilities
    assert isinstance(caps, acpu.AgentCapabilities) and isinstance(
        caps.session_capabilities, acpu.SessionCapabilities
    )
    caps.session_capabilities.fork = acpu.SessionForkCapabilities()
    return unstable


def select_values(option: acp.SessionConfigOption) -> set[str]:
    values: set[str] = set()
    for item in option.options if isinstance(option.options, list) else []:
        if isinstance(item, acp.SessionConfigSelectGroup):
            values.update(o.value for o in item.options)
        else:
            values.add(item.value)
    return values


def check_absolute(path: str, what: str) -> None:
    if not path.startswith("/") and not (len(path) > 2 and path[1] == ":" and path[2] in "\\/"):
        raise RequestError.invalid_params(
            {"path": f"$.params.{what}", "value": path}, f"{what} must be an absolute path"
        )


def dirs(value: Any) -> list[str]:
    dirs = list(value) if isinstance(value, list) else []
    for d in dirs:
        check_absolute(d, "additionalDirectories")
    return dirs


def plain(server: Any) -> Any:
    return msgspec.to_builtins(server) if server is not UNSET else None


__all__ = ["check_absolute", "dirs", "plain", "select_values", "with_fork"]
