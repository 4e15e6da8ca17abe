"""`ProtocolState.take_params_as`: a client reads `session/update` straight into events
(sans-IO), while another connection of the same process keeps the schema's types."""

from __future__ import annotations

import json

import acpstack.events as events
from acpstack.client import ClientRuntime
from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp
from acpstack.wire import IncomingNotification, IncomingResponse, ProtocolState


def client_state(*, as_events: bool) -> ProtocolState:
    state = ProtocolState("client")
    if as_events:
        state.take_params_as(ClientRuntime.incoming_params)
    rid, _, _ = state.start_request("initialize", acp.InitializeRequest(protocol_version=1))
    answer = {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}}
    [event] = state.receive(json.dumps(answer).encode() + b"\n")
    assert isinstance(event, IncomingResponse) and event.error is None
    return state


def update(body: dict[str, object]) -> bytes:
    params = {"sessionId": "s", "update": body}
    frame = {"jsonrpc": "2.0", "method": "session/update", "params": params}
    return json.dumps(frame).encode() + b"\n"


CHUNK = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}


def test_each_connection_reads_updates_into_its_own_type() -> None:
    # Both states decode frames in one pass with a decoder made once per table: one
    # taking events must not hand them to the other (or the other way round).
    for first in (True, False):
        readers = [client_state(as_events=first), client_state(as_events=not first)]
        got = [state.receive(update(CHUNK))[0] for state in readers]
        assert all(isinstance(event, IncomingNotification) for event in got)
        by_events = {
            as_events: type(event.params.update)  # type: ignore[union-attr]
            for as_events, event in zip((first, not first), got, strict=True)
        }
        assert by_events == {True: events.AgentMessageChunk, False: acp.AgentMessageChunk}


def test_the_general_path_reads_events_too() -> None:
    state = client_state(as_events=True)
    seed = {"sessionUpdate": "agent-text", "content": "hi"}  # a seed spelling: normalised first
    unknown = {"sessionUpdate": "_progress", "percent": 5}
    [chunk] = state.receive(update(seed))
    [kept] = state.receive(update(unknown))
    assert isinstance(chunk, IncomingNotification) and isinstance(kept, IncomingNotification)
    assert chunk.params.update == events.AgentMessageChunk(content=acp.TextContent(text="hi"))
    # An unknown kind is kept whole as the wire keeps v1's (the runtime makes it an event).
    assert kept.params.update == UnknownSessionUpdate.of(unknown)


def test_an_unknown_content_block_is_kept_whole_and_a_malformed_update_is_refused() -> None:
    state = client_state(as_events=True)
    hologram = {**CHUNK, "content": {"type": "_hologram", "depth": 3}}
    [kept] = state.receive(update(hologram))
    assert isinstance(kept, IncomingNotification)
    assert kept.params.update == events.UnknownEvent(hologram)
    # Malformed beside the unknown block: refused (dropped and reported), as before.
    bad = {**CHUNK, "content": {"type": "text", "text": 5}}
    for malformed in ({**hologram, "messageId": 7}, bad):
        dropped = state.receive(update(malformed))
        assert [type(event).__name__ for event in dropped] == ["DroppedMessage"]
