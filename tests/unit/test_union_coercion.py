"""Custom-union fields (`__acp_unions__`) decode to the variant their tag names, whatever
path the conversion takes: the fast one for a known tag (nested tags included), the
general one for everything else (unknown, not a string, absent), and a value built in
code is kept as it is."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from acpstack.schema import UnknownSessionUpdate, convert, v2
from acpstack.schema import v1 as acp

TEXT = {"type": "text", "text": "hi"}


def _update(update: dict[str, Any]) -> Any:
    # As the library decodes: msgspec alone knows the known variants only.
    return convert({"sessionId": "s", "update": update}, v2.UpdateSessionNotification).update


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (
            {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": TEXT},
            v2.AgentMessageChunk(message_id="m", content=v2.TextContent(text="hi")),
        ),
        (
            {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
            v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn"),
        ),
        (
            {"sessionUpdate": "state_update", "state": "running"},
            v2.SessionUpdateRunningStateUpdate(),
        ),
        (
            {"sessionUpdate": "user_message", "messageId": "u", "content": [TEXT, TEXT]},
            v2.UserMessage(
                message_id="u", content=[v2.TextContent(text="hi"), v2.TextContent(text="hi")]
            ),
        ),
    ],
)
def test_a_known_tag_decodes_to_its_variant(update: dict[str, Any], expected: Any) -> None:
    decoded = _update(update)
    assert type(decoded) is type(expected)
    assert decoded == expected


@pytest.mark.parametrize(
    "update",
    [
        {"sessionUpdate": "state_update", "state": "dreaming"},
        {"sessionUpdate": "state_update", "state": 3},
        {"sessionUpdate": "state_update"},
        {"sessionUpdate": "new_thing", "x": 1},
        {"sessionUpdate": 5},
        {"sessionUpdate": ["agent_message_chunk"]},
    ],
)
def test_an_unknown_tag_is_kept_whole(update: dict[str, Any]) -> None:
    decoded = _update(update)
    assert decoded == UnknownSessionUpdate.of(update)


def test_an_unknown_content_block_is_kept_as_its_object() -> None:
    block = {"type": "hologram", "x": 1}
    decoded = _update({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": block})
    assert isinstance(decoded, v2.AgentMessageChunk)
    assert decoded.content == block


def test_a_known_tag_with_a_bad_payload_still_fails() -> None:
    bad = {"sessionUpdate": "agent_message_chunk", "messageId": 7, "content": TEXT}
    with pytest.raises(msgspec.ValidationError):
        _update(bad)


def test_a_variant_built_in_code_is_kept_as_it_is() -> None:
    text = v2.TextContent(text="hi")
    chunk = v2.AgentMessageChunk(message_id="m", content=text)
    assert chunk.content is text
    assert v2.UpdateSessionNotification(session_id="s", update=chunk).update is chunk
    v1_chunk = acp.AgentMessageChunk(content=acp.TextContent(text="hi"))
    assert acp.SessionNotification(session_id="s", update=v1_chunk).update is v1_chunk


def test_a_v1_update_decodes_to_its_variant() -> None:
    frame = msgspec.json.encode(
        {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": TEXT}}
    )
    update = msgspec.json.decode(frame, type=acp.SessionNotification).update
    assert update == acp.AgentMessageChunk(content=acp.TextContent(text="hi"))
