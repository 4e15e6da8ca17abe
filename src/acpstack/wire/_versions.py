"""Protocol version negotiation (ACP v1 and the v2 draft), without I/O.

- The agent answers the highest version it speaks at or below the one the client asked
  for (a newer, unknown version gets the agent's latest), and -32022 "Unsupported
  protocol version" with `{requested, supported}` when it speaks none of those.
- `initialize` is the one message read before a version is chosen, and it has a v1 and
  a v2 shape: its `protocolVersion` is read first (`requested_version`), then the params
  are decoded in the shape of the version chosen. A v2-shaped request answered in v1 is
  rewritten into v1 params first (`downgrade_initialize`), as the TypeScript SDK's router
  does: v2 clients offer no `fs` or `terminal`.
- What each side advertised sits in a differently named field per version
  (`clientCapabilities`/`agentCapabilities` in v1, `capabilities` in v2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from acpstack.wire._codec import UNDECODABLE
from acpstack.wire._errors import UNSUPPORTED_PROTOCOL_VERSION, RequestError


class _VersionOnly(Struct):
    protocolVersion: Any = UNSET  # noqa: N815 (the wire name)


_peek = msgspec.json.Decoder(_VersionOnly)


def requested_version(raw: Any) -> int | None:
    """The `protocolVersion` of raw `initialize` params (or result), None when there is no
    usable number (the params then fail to decode in the v1 shape, with a clear error).
    A digit string counts as its number (seed documents send "1")."""
    if not isinstance(raw, msgspec.Raw | bytes):
        return None
    try:
        value = _peek.decode(raw).protocolVersion
    except UNDECODABLE:
        return None
    if isinstance(value, str) and value.isdigit() and len(value) <= 5:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFF:
        return None
    return value


def negotiate(requested: int, supported: Sequence[int]) -> int | None:
    """The highest supported version at or below `requested` (None: none is)."""
    fitting = [v for v in supported if v <= requested]
    return max(fitting) if fitting else None


def unsupported_version(requested: int, supported: Sequence[int]) -> RequestError:
    return RequestError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"requested": requested, "supported": sorted(supported)},
    )


def downgrade_initialize(params: dict[str, Any]) -> dict[str, Any]:
    """v2 `initialize` params as the v1 ones a v1 agent reads: `info` becomes `clientInfo`;
    of the capabilities, what v1 can say (elicitation modes, terminal login) is kept. A v2
    client offers no client file system and no client terminals."""
    out: dict[str, Any] = {"protocolVersion": params.get("protocolVersion")}
    if isinstance(params.get("info"), dict):
        out["clientInfo"] = params["info"]
    caps = params.get("capabilities")
    v1_caps: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    v1_caps["terminal"] = False
    if isinstance(caps, dict):
        auth = caps.get("auth")
        terminal_login = isinstance(auth, dict) and isinstance(auth.get("terminal"), dict)
        v1_caps["auth"] = {"terminal": terminal_login}
        elicitation = caps.get("elicitation")
        if isinstance(elicitation, dict):
            v1_caps["elicitation"] = {
                mode: {} for mode in ("form", "url") if isinstance(elicitation.get(mode), dict)
            }
    out["clientCapabilities"] = v1_caps
    if "_meta" in params:
        out["_meta"] = params["_meta"]
    return out


def advertised(message: Any, version: int, role: str) -> Any:
    """What `message` (an `initialize` request from a client, or a response from an agent)
    advertises, in the shape of `version`; None when it is absent."""
    if version >= 2:
        name = "capabilities"
    else:
        name = "client_capabilities" if role == "client" else "agent_capabilities"
    value = getattr(message, name, None)
    return None if value is UNSET else value


def version_of(message: Any) -> int | UnsetType:
    value = getattr(message, "protocol_version", UNSET)
    return value if isinstance(value, int) else UNSET


__all__ = [
    "advertised",
    "downgrade_initialize",
    "negotiate",
    "requested_version",
    "unsupported_version",
    "version_of",
]
