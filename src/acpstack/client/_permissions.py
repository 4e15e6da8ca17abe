"""Permission policies: how a client answers `session/request_permission`.

The client is the user's guard. No built-in policy approves anything without a user
decision or a rule the user configured:
- `AskUser` (the default) asks through a callback;
- `Rules` answers from rules the user configured (by tool kind, by path pattern) and
  from `allow_always` / `reject_always` choices remembered for the session, and asks
  the fallback policy (by default: reject) for everything else;
- `DenyAll` rejects everything.
A policy returns the option the user (or their rule) chose, or None to reject.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from msgspec import UNSET

from acpstack.schema import v1 as acp

Decision = Literal["allow", "reject"]


class PermissionPolicy(Protocol):
    """How a `ClientRuntime` answers `session/request_permission`: implement `decide`."""

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        """The chosen option, or None to reject (the client then picks a reject option or cancels)."""
        ...


AskCallback = Callable[[acp.RequestPermissionRequest], Awaitable["acp.PermissionOption | None"]]


@dataclass
class AskUser:
    """Ask the user for every request (the default policy)."""

    ask: AskCallback

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        """The option `ask` returns (ValueError for one the request did not offer), or
        None to reject."""
        choice = await self.ask(request)
        if choice is not None and choice not in request.options:
            raise ValueError("the permission callback must return one of the request's options")
        return choice


class DenyAll:
    """Reject everything."""

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        """None: reject."""
        return None


@dataclass
class Rule:
    """A rule the user configured. Matches when every given criterion matches."""

    decision: Decision
    kinds: Sequence[str] = ()  # tool kinds, e.g. ("read", "search")
    paths: Sequence[str] = ()  # glob patterns matched against the tool call's locations

    def matches(self, tool_call: acp.ToolCallUpdate) -> bool:
        """Whether the tool call has one of `kinds` (if given) and every one of its
        locations matches one of `paths` (if given; a call without locations does not)."""
        if self.kinds and (not isinstance(tool_call.kind, str) or tool_call.kind not in self.kinds):
            return False
        if self.paths:
            locations = tool_call.locations if isinstance(tool_call.locations, list) else []
            if not locations or not all(
                any(fnmatch.fnmatch(loc.path, p) for p in self.paths) for loc in locations
            ):
                return False
        return True


@dataclass
class Rules:
    """Rules first, then remembered always-choices of this session, then the fallback."""

    rules: Sequence[Rule] = ()
    fallback: PermissionPolicy = field(default_factory=DenyAll)
    remembered: dict[tuple[str, str], Decision] = field(default_factory=dict)

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        """The first matching rule's decision, else a remembered always-choice for this
        session and the call's kind (or title), else the fallback's answer (remembered when it is an
        `allow_always` or `reject_always` option)."""
        for rule in self.rules:
            if rule.matches(request.tool_call):
                return _option_for(request.options, rule.decision)
        key = (request.session_id, _remember_key(request.tool_call))
        if key in self.remembered:
            return _option_for(request.options, self.remembered[key])
        choice = await self.fallback.decide(request)
        if choice is not None and choice.kind in ("allow_always", "reject_always"):
            self.remembered[key] = "allow" if choice.kind == "allow_always" else "reject"
        return choice


def _remember_key(tool_call: acp.ToolCallUpdate) -> str:
    """What an `allow_always` applies to: the tool kind (or the title when there is none)."""
    if isinstance(tool_call.kind, str):
        return f"kind:{tool_call.kind}"
    title = tool_call.title if tool_call.title is not UNSET else None
    return f"title:{title}"


def _option_for(
    options: Sequence[acp.PermissionOption], decision: Decision
) -> acp.PermissionOption | None:
    wanted = (
        ("allow_once", "allow_always") if decision == "allow" else ("reject_once", "reject_always")
    )
    for kind in wanted:
        for option in options:
            if option.kind == kind:
                return option
    return None


def reject_option(options: Sequence[acp.PermissionOption]) -> acp.PermissionOption | None:
    return _option_for(options, "reject")
