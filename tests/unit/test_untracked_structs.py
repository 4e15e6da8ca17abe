"""The data a connection decodes is not tracked by Python's cyclic garbage collector:
the wire types (every generated Struct of `acpstack.schema`), the session events
(`acpstack.events`) and the events `ProtocolState` hands over for requests and
notifications. They are trees of JSON values, so reference counting frees them; a busy
stream of updates no longer triggers collections (docs/performance.md: about 15% of a
client's CPU per streamed update before). What stays tracked: `IncomingResponse`, whose error may
hold a traceback."""

from __future__ import annotations

import gc
import inspect
import json
from types import ModuleType
from typing import Any

import msgspec
import pytest

from acpstack import events
from acpstack.schema import v1, v1_nes, v1_unstable, v2, v2_unstable
from acpstack.wire import IncomingNotification, IncomingRequest, IncomingResponse, ProtocolState


def _structs(module: ModuleType) -> list[type]:
    return [
        value
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct)
    ]


@pytest.mark.parametrize(
    "module", [v1, v1_unstable, v1_nes, v2, v2_unstable, events], ids=lambda m: m.__name__
)
def test_every_data_type_is_untracked(module: ModuleType) -> None:
    structs = _structs(module)
    assert len(structs) > 20  # the module's types were found
    tracked = [s.__name__ for s in structs if s.__struct_config__.gc]
    assert tracked == []


def _client_state() -> ProtocolState:
    state = ProtocolState("client")
    rid, _, _ = state.start_request("initialize", v1.InitializeRequest(protocol_version=1))
    state.receive(
        json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}}).encode() + b"\n"
    )
    return state


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


UPDATE = {
    "method": "session/update",
    "params": {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hello", "_meta": {"k": [1, 2]}},
        },
    },
}


def test_a_received_update_and_everything_in_it_is_untracked() -> None:
    state = _client_state()
    # one line alone (the one-pass decode) and two in one read (the general path)
    for data in (_line(UPDATE), _line(UPDATE) * 2):
        received = state.receive(data)
        assert received and all(isinstance(e, IncomingNotification) for e in received)
        for event in received:
            update = event.params.update
            assert update.content.text == "hello"
            objects = [event, event.params, update, update.content]
            assert [gc.is_tracked(o) for o in objects] == [False] * 4
            # a container in the JSON is a plain dict or list: tracked as always
            assert gc.is_tracked(update.content.meta)


def test_a_request_of_the_peer_is_untracked_and_an_answer_stays_tracked() -> None:
    state = _client_state()
    request = {"id": 7, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a"}}
    [event] = state.receive(_line(request))
    assert isinstance(event, IncomingRequest) and event.params.path == "/a"
    assert not gc.is_tracked(event) and not gc.is_tracked(event.params)
    rid, _, _ = state.start_request("session/new", v1.NewSessionRequest(cwd="/", mcp_servers=[]))
    [answer] = state.receive(_line({"id": rid, "result": {"sessionId": "s2"}}))
    assert isinstance(answer, IncomingResponse) and answer.result.session_id == "s2"
    assert gc.is_tracked(answer)  # may hold an error, whose traceback may lead back to it
    assert not gc.is_tracked(answer.result)


def test_untracked_types_behave_as_before() -> None:
    chunk = v1.AgentMessageChunk(content=v1.TextContent(text="x"))
    note = v1.SessionNotification(session_id="s", update=chunk)
    again = msgspec.json.decode(msgspec.json.encode(note), type=v1.SessionNotification)
    assert again == note and again is not note
    copy = msgspec.structs.replace(note, session_id="t")
    assert copy.update is note.update and copy.session_id == "t"
    # a Struct still frees what it holds when its last reference goes
    freed = []

    class Probe:
        def __del__(self) -> None:
            freed.append(True)

    holder = v1.TextContent(text="x", meta={"probe": Probe()})
    del holder
    assert freed == [True]
