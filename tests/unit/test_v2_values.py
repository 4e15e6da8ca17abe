"""The narrowing of v2's open enum values to v1's closed Literals, where a call's result
has v1's types (sans-IO)."""

from __future__ import annotations

from typing import get_args

import msgspec
import pytest

from acpstack.client import _v2_values as values
from acpstack.schema import v1 as acp


def test_the_known_values_are_the_model_literals() -> None:
    assert values.STOP_REASONS == get_args(acp.StopReason)
    assert values.PERMISSION_KINDS == get_args(acp.PermissionOptionKind)
    assert values.TOOL_KINDS == get_args(acp.ToolKind)
    assert values.TOOL_STATUSES == ("pending", "in_progress", "completed", "failed")
    # v1's config option type is an inline Literal: the one here must be the same.
    (field,) = [f for f in msgspec.structs.fields(acp.SessionConfigOption) if f.name == "type"]
    (literal,) = [arm for arm in get_args(field.type) if arm is not msgspec.UnsetType]
    assert values.CONFIG_OPTION_TYPES == get_args(literal)


@pytest.mark.parametrize("known", get_args(acp.StopReason))
def test_a_known_stop_reason_is_kept(known: str) -> None:
    assert values.stop_reason(known) == known


@pytest.mark.parametrize("unknown", ["_paused", "error_budget", "", None, 3, "END_TURN"])
def test_an_unknown_value_gets_its_fallback(unknown: object) -> None:
    assert values.stop_reason(unknown) == "end_turn"
    assert values.permission_kind(unknown) is None
    assert values.config_option_type(unknown) is None
    if unknown is not None:  # (null clears a tool call's kind or status: it stays null)
        assert values.tool_kind(unknown) == "other"
        assert values.tool_status(unknown) == "in_progress"


def test_known_values_pass_unchanged() -> None:
    assert values.permission_kind("reject_always") == "reject_always"
    assert values.config_option_type("select") == "select"
    assert values.tool_kind("switch_mode") == "switch_mode"
    assert values.tool_kind(None) is None
    assert values.tool_status("failed") == "failed"
    assert values.tool_status("paused") == "in_progress"  # v2 only: started, not over
    assert values.tool_status("cancelled") == "failed"  # v2 only: over, not done
    assert values.tool_status(None) is None
