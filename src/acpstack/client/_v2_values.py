"""v2's open string enums as v1's closed ones, where a call's result has v1's types.

Every enum of protocol version 2 is open (`_`-prefixed values are custom, other unknown
values are reserved for future versions). The session's events and state keep the agent's
own values; only what `ClientRuntime`'s calls return, or hand to a policy, has v1's
closed `Literal`s. Each function here checks a v2 value against the values of such a
`Literal` and says what a value v1 does not know becomes:

- a stop reason (`PromptResponse`): `end_turn`, a generic stop (the exact value stays in
  `SessionState.stop_reason`);
- a permission option's kind: None, and the option is left out (a policy must never take
  an option it cannot read for an "allow" or a "reject");
- a config option's type (the answers of `new_session` and the resumes): None, and the
  option is left out;
- the kind of a permission request's tool call: `other` (v2: "clients display an
  unrecognized kind as `other`"); its status: `in_progress` for an unknown one (v2:
  "clients treat a tool call with an unrecognized status as still in progress") and for
  `paused` (started, not over), and `failed` for `cancelled` (over without success).
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
