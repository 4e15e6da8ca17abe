"""The one-pass decode (`acpstack.wire._onepass`) changes nothing but the speed: every frame
gives the same events and the same answers as the general path (envelope, then params),
and what the general path treats specially never goes the fast way."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from acpstack.schema import STABLE_METHODS, UNSTABLE_METHODS, MethodSpec, seed_markers
from acpstack.schema import v1 as acp
from acpstack.wire import HANDSHAKE_METHODS, IncomingRequest, IncomingResponse, ProtocolState

from ._schema_strategies import SchemaStrategies

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "vendor" / "acp-schema" / "v1"


def frame(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def agent(unstable: bool = False) -> ProtocolState:
    """An agent side after `initialize`."""
    state = ProtocolState("agent", unstable=unstable)
    [event] = state.receive(
        frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    )
    assert isinstance(event, IncomingRequest)
    answer = acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities())
    state.result(event.id, "initialize", answer)
    state.take_outgoing()
    return state


def client(unstable: bool = False, write: bool = False) -> ProtocolState:
    """A client side after `initialize`, advertising fs reads (and writes if `write`)."""
    state = ProtocolState("client", unstable=unstable)
    caps = acp.ClientCapabilities(
        fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=write), terminal=True
    )
    rid, _, _ = state.start_request(
        "initialize", acp.InitializeRequest(protocol_version=1, client_capabilities=caps)
    )
    result = {"protocolVersion": 1, "agentCapabilities": {}}
    [event] = state.receive(frame({"jsonrpc": "2.0", "id": rid, "result": result}))
    assert isinstance(event, IncomingResponse) and event.error is None
    return state


def outcome(state: ProtocolState, data: bytes, fast: bool = True) -> tuple[list[Any], list[Any]]:
    """The events (in a comparable form) and the answers the state gives for `data`, read
    as usual (`fast`) or line by line through the general path alone."""
    if fast:
        received = state.receive(data)
    else:
        lines = [line.removesuffix(b"\r") for line in data.split(b"\n")]
        received = [e for line in lines if line.strip() for e in [state._general(line)] if e]
    events = []
    for event in received:
        fields = {f: getattr(event, f) for f in event.__struct_fields__}
        if isinstance(event, IncomingResponse):
            fields["call"] = event.call.id
            fields["error"] = None if event.error is None else repr(event.error)
        fields.pop("spec", None)
        for key in ("params", "result"):
            if key in fields:
                fields[key] = msgspec.json.encode(fields[key])
        events.append((type(event).__name__, fields))
    answers = [json.loads(line) for line in state.take_outgoing().splitlines()]
    return events, answers


def same_both_ways(make: Any, data: bytes, *, fast: bool) -> tuple[list[Any], list[Any]]:
    """Check that the one-pass path takes `data` (or leaves it, when not `fast`) and that
    the outcome is the general path's; return it."""
    probe = make()
    taken = probe._one_pass(data.rstrip(b"\n"))
    assert (taken is not None) == fast
    result = outcome(make(), data)
    assert result == outcome(make(), data, fast=False)
    return result


# ---- every method, documents drawn from the official schema ---------------------------

INBOUND = [
    (spec, unstable)
    for unstable, table in ((False, STABLE_METHODS), (True, UNSTABLE_METHODS))
    for spec in table
    if spec.handled_by in ("agent", "client")
    and (not unstable or spec.unstable)
    and spec.name != "initialize"
    and isinstance(spec.params, type)
    and issubclass(spec.params, msgspec.Struct)
]


@cache
def strategies(unstable: bool) -> tuple[SchemaStrategies, dict[str, Any]]:
    name = "schema.unstable.json" if unstable else "schema.json"
    schema = json.loads((SCHEMA_DIR / name).read_text())
    return SchemaStrategies(schema), schema


@pytest.mark.parametrize(
    "case", INBOUND, ids=[f"{s.name}:{'unstable' if u else 'stable'}" for s, u in INBOUND]
)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_inbound_method_decodes_as_the_general_path_does(
    case: tuple[MethodSpec, bool], data: st.DataObject
) -> None:
    spec, unstable = case
    draw, schema = strategies(unstable)
    name = spec.params.__name__
    doc = data.draw(draw.for_def(name), label=name)
    checker = Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})
    assume(checker.is_valid(doc))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": spec.name, "params": doc}
    if spec.kind == "request":
        message["id"] = data.draw(st.integers(1, 2**40) | st.text(max_size=8), label="id")
    # The client's gated methods: advertise everything, so they pass their gate.
    make = (
        (lambda: agent(unstable))
        if spec.handled_by == "agent"
        else (lambda: client(unstable, write=True))
    )
    raw = frame(message)
    # Taken in one pass unless its seed spellings may be in it (or it always needs
    # normalising), or it is a request whose gate is not checked yet (notifications
    # have none).
    markers = seed_markers(spec.name)
    gated = spec.gate is not None and spec.kind == "request"
    fast = markers is not None and not any(m in raw for m in markers) and not gated
    fast = fast and spec.name not in HANDSHAKE_METHODS  # (proxy/initialize: a handshake)
    events, answers = same_both_ways(make, raw, fast=fast)
    if fast:  # (a gated one or a handshake may be refused: the same way on both paths)
        assert len(events) == 1 and not answers


# ---- what must go the general way -----------------------------------------------------

SESSION_NEW = {"cwd": "/", "mcpServers": []}
READ = {"sessionId": "s", "path": "/f"}
UPDATE = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                       "content": {"type": "text", "text": "hi"}}}  # fmt: skip


@pytest.mark.parametrize(
    ("side", "message"),
    [
        # Seed spellings a strict decode would silently ignore: normalised instead.
        ("reader", {"id": 1, "method": "fs/read_text_file", "params": {**READ, "startLine": 3}}),
        (
            "agent",
            {
                "id": 1,
                "method": "session/new",
                "params": {
                    **SESSION_NEW,
                    "mcpServers": [
                        {
                            "name": "m",
                            "command": "c",
                            "args": [],
                            "env": [],
                            "transport": {"type": "http", "url": "http://x"},
                        }
                    ],
                },
            },
        ),  # fmt: skip
        ("agent", {"id": 1, "method": "session/new", "params": {"workingDirectory": "/w"}}),
        # Shapes that are not a valid message of their method.
        ("agent", {"id": 1, "method": "session/new", "params": SESSION_NEW, "result": {}}),
        ("agent", {"id": 1, "method": "session/new", "params": SESSION_NEW, "error": {}}),
        ("client", {"id": 1, "method": "session/update", "params": UPDATE}),
        ("agent", {"method": "session/new", "params": SESSION_NEW}),
        ("agent", {"id": 1, "method": "session/new"}),
        ("agent", {"id": True, "method": "session/new", "params": SESSION_NEW}),
        ("client", {"method": "session/update", "params": {"sessionId": "s"}}),
        ("agent", {"jsonrpc": "1.0", "id": 1, "method": "session/new", "params": SESSION_NEW}),
        ("agent", {"jsonrpc": None, "id": 1, "method": "session/new", "params": SESSION_NEW}),
        # Handled apart: cancellation, extension methods, alias names, initialize again.
        ("agent", {"method": "$/cancel_request", "params": {"requestId": 4}}),
        ("agent", {"id": 1, "method": "_x/y", "params": {"a": 1}}),
        ("agent", {"id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        # A gate the client did not open (it advertised no fs writes).
        (
            "client",
            {"id": 1, "method": "fs/write_text_file", "params": {**READ, "content": "x"}},
        ),  # fmt: skip
    ],
)
def test_what_the_general_path_treats_specially_never_goes_the_fast_way(
    side: str, message: dict[str, Any]
) -> None:
    message = {"jsonrpc": "2.0", **message}
    message = {k: v for k, v in message.items() if v is not None}
    make = {"agent": agent, "client": client, "reader": reader}[side]
    same_both_ways(make, frame(message), fast=False)


def reader() -> ProtocolState:
    """A client that has answered a file read already (the gate is checked)."""
    state = client()
    [event] = state.receive(
        frame({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file", "params": READ})
    )
    assert isinstance(event, IncomingRequest)
    assert state._one_pass(frame({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file",
                                  "params": READ}).rstrip())  # fmt: skip
    return state


def test_a_gate_is_checked_once_then_the_method_goes_the_fast_way() -> None:
    state = client(write=True)
    data = frame({"jsonrpc": "2.0", "id": 1, "method": "fs/write_text_file",
                  "params": {**READ, "content": "x"}})  # fmt: skip
    assert state._one_pass(data.rstrip()) is None  # not checked yet
    [event] = state.receive(data)
    assert isinstance(event, IncomingRequest)
    assert state._one_pass(data.rstrip()) is not None


def test_nothing_goes_the_fast_way_before_initialize_completes() -> None:
    state = ProtocolState("agent")
    data = frame({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": SESSION_NEW})
    assert state._one_pass(data.rstrip()) is None
    [] = state.receive(data)
    [error] = [json.loads(x) for x in state.take_outgoing().splitlines()]
    assert error["error"]["code"] == -32600


def test_invalid_utf8_where_nothing_reads_it_is_still_a_parse_error() -> None:
    bad = (
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":'
        b'{"cwd":"/","mcpServers":[],"unknown":"\xff"}}\n'
    )
    events, answers = same_both_ways(agent, bad, fast=False)
    assert not events and answers[0]["error"]["code"] == -32700


# ---- answers to a call -------------------------------------------------------------


def waiting_client() -> ProtocolState:
    """A client with one call pending: `session/new`, id 1."""
    state = client()
    rid, _, _ = state.start_request("session/new", acp.NewSessionRequest(cwd="/", mcp_servers=[]))
    assert rid == 1
    return state


@pytest.mark.parametrize(
    ("answer", "fast"),
    [
        ({"id": 1, "result": {"sessionId": "s1"}}, True),
        ({"id": 1, "result": {"sessionId": "s1", "modes": None, "extra": [1]}}, True),
        ({"id": 1, "result": None}, False),  # null: decoded leniently by the general path
        ({"id": 1, "result": {}}, False),  # invalid: the general path explains why
        ({"id": 1, "error": {"code": -32000, "message": "no"}}, False),
        ({"id": 1, "result": {"sessionId": "s1"}, "error": {"code": 1, "message": "x"}}, False),
        ({"id": 2, "result": {"sessionId": "s1"}}, False),  # not the pending call's id
        ({"id": "1", "result": {"sessionId": "s1"}}, False),
        ({"jsonrpc": "1.0", "id": 1, "result": {"sessionId": "s1"}}, False),
    ],
)
def test_an_answer_decodes_as_the_general_path_does(answer: dict[str, Any], fast: bool) -> None:
    same_both_ways(waiting_client, frame({"jsonrpc": "2.0", **answer}), fast=fast)


def test_with_several_calls_pending_answers_go_the_general_way() -> None:
    def make() -> ProtocolState:
        state = waiting_client()
        state.start_request("session/new", acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        return state

    same_both_ways(
        make, frame({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "b"}}), fast=False
    )


@pytest.mark.parametrize("role", ["agent", "client"])
@pytest.mark.parametrize(
    ("version", "unstable", "extensions"),
    [(1, False, ()), (1, True, ()), (1, True, ("nes",)), (2, False, ()), (2, True, ())],
)
def test_the_decoder_is_made_for_every_method_table(
    role: Any, version: int, unstable: bool, extensions: tuple[str, ...]
) -> None:
    state = ProtocolState(role, unstable=unstable, extensions=extensions, versions=(version,))
    decode = state._call_decoder()
    # A method name that is both a request and a notification (unstable `proxy/successor`)
    # has no tag of its own: it goes the general way, both kinds.
    both = state._requests_in.keys() & state._notifications_in.keys()
    for name in both:
        with pytest.raises(msgspec.ValidationError):
            decode(json.dumps({"jsonrpc": "2.0", "method": name, "params": {}}).encode())


def test_receive_one_takes_a_common_chunk_and_leaves_anything_else_to_receive() -> None:
    new = frame({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": SESSION_NEW})
    state = agent()
    event = state.receive_one(new)
    assert isinstance(event, IncomingRequest) and event.method == "session/new"
    assert outcome(agent(), new)[0] == outcome(agent(), new, fast=False)[0]
    # Not one whole common message: nothing consumed, `receive` gets all of it.
    for chunk in (new + new, new.replace(b"2.0", b"1.0"), b"  \r\n"):
        state = agent()
        assert state.receive_one(chunk) is None
        assert outcome(state, chunk) == outcome(agent(), chunk, fast=False)
    state = agent()
    assert state.receive(new[:10]) == []
    assert state.receive_one(new[10:]) is None  # it ends the line begun before
    [event] = state.receive(new[10:])
    assert isinstance(event, IncomingRequest)
