"""v2's open string enums as the model's closed ones.

Every enum of protocol version 2 is open (`_`-prefixed values are custom, other unknown
values are reserved for future versions); the model of a session has v1's closed
`Literal`s. Each function here checks a v2 value against the values of the model's
`Literal` and says what a value the model does not know becomes:

- a stop reason: `end_turn`, a generic stop (the exact value stays in
  `SessionState.stop_reason`);
- a plan entry's priority: `medium`; its status: `pending`, not done (v2's `cancelled`
  too: v1 has no such status);
- a permission option's kind: None, and the option is left out (a policy must never take
  an option it cannot read for an "allow" or a "reject");
- a config option's type: None, and the option is left out;
- a tool call's kind: `other` (v2: "clients display an unrecognized kind as `other`");
  its status: `in_progress` for an unknown one (v2: "clients treat a tool call with an
  unrecognized status as still in progress") and for `paused` (started, not over), and
  `failed` for `cancelled` (over without success; v1 has no such status, and a call left
  `in_progress` would never end in the model). `SessionState.tool_calls` keeps the
  agent's own value (as `stop_reason` does).

What the model cannot hold is not lost: `ClientRuntime(on_wire_update=...)` gets every
update as it arrived.
"""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

from acpstack.schema import v1 as acp

_Value = TypeVar("_Value", bound=str)

# `SessionConfigOption.type` of v1 (an inline Literal in the schema, so it has no name there;
# mypy checks that this one fits the field).
ConfigOptionType = Literal["boolean", "select"]

STOP_REASONS: tuple[acp.StopReason, ...] = get_args(acp.StopReason)
PERMISSION_KINDS: tuple[acp.PermissionOptionKind, ...] = get_args(acp.PermissionOptionKind)
PLAN_PRIORITIES: tuple[acp.PlanEntryPriority, ...] = get_args(acp.PlanEntryPriority)
PLAN_STATUSES: tuple[acp.PlanEntryStatus, ...] = get_args(acp.PlanEntryStatus)
CONFIG_OPTION_TYPES: tuple[ConfigOptionType, ...] = get_args(ConfigOptionType)
TOOL_KINDS: tuple[acp.ToolKind, ...] = get_args(acp.ToolKind)
TOOL_STATUSES: tuple[acp.ToolCallStatus, ...] = get_args(acp.ToolCallStatus)


def known(value: object, values: tuple[_Value, ...]) -> _Value | None:
    """`value` as one of `values` (a `Literal`'s values), or None when it is none of them."""
    for candidate in values:
        if value == candidate:
            return candidate
    return None


def stop_reason(value: object) -> acp.StopReason:
    """The stop reason of a v2 turn's end; an unknown or missing one is `end_turn`."""
    return known(value, STOP_REASONS) or "end_turn"


def permission_kind(value: object) -> acp.PermissionOptionKind | None:
    """A permission option's kind, or None for a kind the model does not know."""
    return known(value, PERMISSION_KINDS)


def plan_priority(value: object) -> acp.PlanEntryPriority:
    """A plan entry's priority; an unknown one is `medium`."""
    return known(value, PLAN_PRIORITIES) or "medium"


def plan_status(value: object) -> acp.PlanEntryStatus:
    """A plan entry's status; an unknown one (v2's `cancelled` too) is `pending`."""
    return known(value, PLAN_STATUSES) or "pending"


def config_option_type(value: object) -> ConfigOptionType | None:
    """A config option's type, or None for a type the model does not know."""
    return known(value, CONFIG_OPTION_TYPES)


def tool_kind(value: object) -> acp.ToolKind | None:
    """A tool call's kind; an unknown one is `other`, None (cleared) stays None."""
    return None if value is None else known(value, TOOL_KINDS) or "other"


def tool_status(value: object) -> acp.ToolCallStatus | None:
    """A tool call's status; `cancelled` is `failed`, any other unknown one (`paused` too)
    `in_progress`; None (cleared) stays None."""
    if value is None:
        return None
    if value == "cancelled":
        return "failed"
    return known(value, TOOL_STATUSES) or "in_progress"
