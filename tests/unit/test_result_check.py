"""`checked_result`: what our handlers answer, checked against the method's result type."""

from __future__ import annotations

from typing import Any

import pytest

from acpstack.schema import STABLE_METHODS
from acpstack.schema import v1 as acp
from acpstack.wire import InvalidResult, checked_result

SPECS = {spec.name: spec for spec in STABLE_METHODS}


def test_valid_answers_pass_as_they_are() -> None:
    prompt = SPECS["session/prompt"]
    good = acp.PromptResponse(stop_reason="end_turn")
    assert checked_result(prompt, good) is good
    as_dict: dict[str, Any] = {"stopReason": "refusal", "_meta": {"x": 1}, "vendorField": 2}
    assert checked_result(prompt, as_dict) is as_dict  # unknown fields are kept
    assert checked_result(SPECS["authenticate"], None) is None  # an empty answer
    mode = acp.SetSessionModeResponse()
    assert checked_result(SPECS["session/set_mode"], mode) is mode
    assert checked_result(None, {"anything": True}) == {"anything": True}  # `_` methods


@pytest.mark.parametrize(
    ("method", "answer", "says"),
    [
        (
            "session/prompt",
            acp.PromptResponse(stop_reason="finished"),
            "'finished' for `stopReason`",
        ),  # type: ignore[arg-type]
        ("session/prompt", {"stopReason": "finished"}, "at `$.stopReason`"),
        ("session/prompt", None, "nothing (a PromptResponse is required)"),
        ("session/prompt", "end_turn", "Expected `object`, got `str`"),
        ("session/new", {"sessionId": 42}, "at `$.sessionId`"),
        (
            "session/new",
            acp.PromptResponse(stop_reason="end_turn"),
            "(a PromptResponse): Object missing required field",
        ),
        ("session/new", object(), "a object"),
    ],
)
def test_invalid_answers_name_the_handler_and_the_field(
    method: str, answer: Any, says: str
) -> None:
    with pytest.raises(InvalidResult) as info:
        checked_result(SPECS[method], answer)
    handler = SPECS[method].handler
    assert str(info.value).startswith(f"the `{handler}` handler of {method} returned ")
    assert says in str(info.value)


def test_an_unset_optional_closed_field_is_fine() -> None:
    for spec in STABLE_METHODS:
        if spec.result is None or spec.kind != "request":
            continue
        try:
            empty = spec.result()
        except TypeError:
            continue  # has required fields
        assert checked_result(spec, empty) is empty
