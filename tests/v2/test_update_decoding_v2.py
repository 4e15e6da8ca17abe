"""How a client decodes v2 `session/update`s: a known variant in msgspec's one pass, straight
into its typed structs; what that pass cannot hold (an unknown update or content block, a
`state_update`, whose variants share one `sessionUpdate`) converted apart, kept as before;
a malformed update dropped with its path, and the updates after it still delivered.

The end-to-end case runs a real agent process (tests/v2/peers/raw_updates_agent.py) that
writes each update exactly as the test gives it.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acpstack import spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import UnknownSessionUpdate, convert, v2, v2_unstable
from acpstack.schema import v1 as acp
from acpstack.wire import DroppedMessage

PEER = Path(__file__).resolve().parent / "peers" / "raw_updates_agent.py"
CHUNK = b'{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":%s}'


@pytest.mark.parametrize("module", [v2, v2_unstable], ids=["stable", "unstable"])
def test_known_variants_are_decoded_by_msgspec_itself(module: Any) -> None:
    # The field types msgspec decodes are its own tagged unions of the known variants (not
    # `Any` and a conversion afterwards), in both v2 modules.
    hints = typing.get_type_hints(module.UpdateSessionNotification)
    assert module.AgentMessageChunk in typing.get_args(hints["update"])
    hints = typing.get_type_hints(module.ContentChunk)
    assert set(typing.get_args(hints["content"])) >= {module.TextContent, module.ImageContent}
    decoded = msgspec.json.decode(
        b'{"sessionId":"s","update":' + CHUNK % b'{"type":"text","text":"hi"}' + b"}",
        type=module.UpdateSessionNotification,
    )
    assert type(decoded.update) is module.AgentMessageChunk
    assert type(decoded.update.content) is module.TextContent


def test_what_the_native_union_cannot_hold_is_converted_apart() -> None:
    def update(raw: bytes) -> Any:
        data = {"sessionId": "s", "update": msgspec.json.decode(raw)}
        return convert(data, v2.UpdateSessionNotification).update

    chunk = update(CHUNK % b'{"type":"_hologram","depth":3}')
    assert type(chunk) is v2.AgentMessageChunk
    assert chunk.content == {"type": "_hologram", "depth": 3}  # an unknown block: kept whole
    message = update(
        b'{"sessionUpdate":"agent_message","messageId":"m","content":'
        b'[{"type":"text","text":"a"},{"type":"_z"}]}'
    )
    assert message.content == [v2.TextContent(text="a"), {"type": "_z"}]
    tool = update(
        b'{"sessionUpdate":"tool_call_update","toolCallId":"t","content":'
        b'[{"type":"content","content":{"type":"_q"}},{"type":"_other"}]}'
    )
    assert tool.content == [v2.Content(content={"type": "_q"}), {"type": "_other"}]
    idle = update(b'{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}')
    assert type(idle) is v2.SessionUpdateIdleStateUpdate and idle.stop_reason == "end_turn"
    paused = update(b'{"sessionUpdate":"state_update","state":"_paused"}')
    assert paused == UnknownSessionUpdate.of({"sessionUpdate": "state_update", "state": "_paused"})
    assert update(b'{"sessionUpdate":"_new","a":1}').data == {"sessionUpdate": "_new", "a": 1}
    # Invalid stays invalid: the error names where.
    with pytest.raises(msgspec.ValidationError, match=r"\$\.update\.messageId"):
        update(b'{"sessionUpdate":"agent_message_chunk","messageId":5,"content":{"type":"_x"}}')
    # Built in code from a dict: kept as given, as v1's structs do (no __post_init__ runs
    # for each decoded chunk); `convert` types it.
    built = v2.AgentMessageChunk(message_id="m", content={"type": "text", "text": "x"})  # type: ignore[arg-type]
    assert built.content == {"type": "text", "text": "x"}
    typed = convert({"messageId": "m", "content": {"type": "text", "text": "x"}}, v2.ContentChunk)
    assert typed.content == v2.TextContent(text="x")


async def test_a_client_gets_every_update_and_drops_only_the_malformed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    updates = [
        CHUNK % b'{"type":"text","text":"one"}',
        CHUNK % b'{"type":"_hologram"}',
        b'{"sessionUpdate":"_progress","percent":50}',
        CHUNK % b'{"type":"text","text":5}',  # malformed: dropped
        b'{"sessionUpdate":"agent_message_chunk","messageId":7,"content":{"type":"_x"}}',  # too
        CHUNK % b'{"type":"text","text":"two"}',
    ]
    script = tmp_path / "updates.jsonl"
    script.write_bytes(b"\n".join(updates) + b"\n")
    seen: list[Any] = []
    dropped: list[DroppedMessage] = []
    runtime = ClientRuntime(
        protocol_version=2,
        on_update=lambda sid, update: seen.append(update),
        on_dropped=dropped.append,
    )
    async with spawn_agent([sys.executable, str(PEER), str(script)], runtime):
        await runtime.initialize()
        sid = (await runtime.new_session("/tmp")).session_id
        result = await runtime.prompt(sid, "go", timeout=30)
        state = runtime.sessions[sid].state
    assert result.stop_reason == "end_turn"
    assert [type(u).__name__ for u in seen] == [
        "StateUpdate",
        "AgentMessageChunk",
        "UnknownEvent",  # a block of a type this library does not know: the chunk kept whole
        "UnknownEvent",
        "AgentMessageChunk",
        "StateUpdate",
    ]
    assert seen[1].content == acp.TextContent(text="one")
    assert seen[2].data["content"] == {"type": "_hologram"}
    assert [(d.reason, d.method) for d in dropped] == [("invalid_params", "session/update")] * 2
    assert [d.detail for d in dropped] == [
        "Expected `str`, got `int`",
        "Expected `str | null`, got `int`",  # (an event's messageId may be null: v1's may)
    ]
    logged = [r.getMessage() for r in caplog.records if "dropped notification" in r.getMessage()]
    assert "$.params.update.content.text" in logged[0]  # where, never the value
    assert "$.params.update.messageId" in logged[1]
    assert runtime.dropped_messages == 2
    agent_text = "".join(m.text for m in state.messages if m.speaker == "agent")
    assert agent_text == "onetwo"  # the unknown block adds no text; nothing is lost around it
    assert [u["sessionUpdate"] for u in state.unknown_updates] == [
        "agent_message_chunk",
        "_progress",
    ]
    assert state.stop_reason == "end_turn"


def test_a_state_update_is_read_in_one_pass_and_never_leaves_its_carrier() -> None:
    # `state_update` variants share one `sessionUpdate`: the native union holds a carrier
    # for them, which the holding struct (or `convert`, for the bare union) turns into the
    # variant its `state` names, checked as that variant.
    frame = b'{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle",'
    decoded = msgspec.json.decode(
        frame + b'"stopReason":"end_turn","background":[{"type":"terminal","terminalId":"t"}]}}',
        type=v2.UpdateSessionNotification,
    )
    assert type(decoded.update) is v2.SessionUpdateIdleStateUpdate
    assert decoded.update.stop_reason == "end_turn"
    assert decoded.update.background == [v2.BackgroundTerminal(terminal_id="t")]
    running = convert({"sessionUpdate": "state_update", "state": "running"}, v2.SessionUpdate)
    assert type(running) is v2.SessionUpdateRunningStateUpdate
    replay = convert(
        {"sessionUpdate": "state_update", "state": "requires_action"}, v2_unstable.SessionUpdate
    )
    assert type(replay) is v2_unstable.SessionUpdateRequiresActionStateUpdate
    with pytest.raises(msgspec.ValidationError):  # checked as the idle variant it names
        msgspec.json.decode(frame + b'"stopReason":5}}', type=v2.UpdateSessionNotification)
