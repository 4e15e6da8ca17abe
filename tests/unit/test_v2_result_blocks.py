"""A v2 content block as v1's (a permission request's tool call keeps v1's shape), sans-IO:
the plain text block's shortcut and the general conversion give the same value."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from acpstack.client import _v2_results as view
from acpstack.schema import v1 as acp
from acpstack.schema import v2


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (v2.TextContent(text="hi"), acp.TextContent(text="hi")),
        (
            v2.TextContent(text="hi", annotations=v2.Annotations(priority=0.5)),
            acp.TextContent(text="hi", annotations=acp.Annotations(priority=0.5)),
        ),
        (v2.TextContent(text="hi", meta={"k": 1}), acp.TextContent(text="hi", meta={"k": 1})),
        (
            v2.ImageContent(data="aGk=", mime_type="image/png"),
            acp.ImageContent(data="aGk=", mime_type="image/png"),
        ),
    ],
)
def test_a_block_becomes_the_models_block(block: Any, expected: Any) -> None:
    converted = view.block(block)
    assert type(converted) is type(expected)
    assert converted == expected
    assert msgspec.json.encode(converted) == msgspec.json.encode(block)


def test_a_text_blocks_meta_is_a_copy() -> None:
    meta = {"k": [1]}
    converted = view.block(v2.TextContent(text="hi", meta=meta))
    assert converted.meta == meta
    assert converted.meta is not meta


def test_an_unknown_block_is_kept_as_its_object() -> None:
    assert view.block({"type": "hologram", "x": 1}) == {"type": "hologram", "x": 1}
