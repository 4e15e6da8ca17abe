"""The sans-IO state machine and codec, without an event loop."""

from __future__ import annotations

import json

import pytest

from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp
from acpstack.wire import (
    CapabilityError,
    IncomingCancel,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    ProtocolState,
    RequestError,
)
from acpstack.wire._codec import Envelope, Invalid, decode_envelope


def replies(state: ProtocolState) -> list[dict]:
    out = state.take_outgoing()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def line(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def initialized_agent() -> ProtocolState:
    state = ProtocolState("agent")
    [event] = state.receive(
        line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    )
    assert isinstance(event, IncomingRequest)
    state.result(
        event.id,
        "initialize",
        acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities()),
    )
    return state


def initialized_client(agent_caps: dict | None = None) -> ProtocolState:
    state = ProtocolState("client")
    caps = acp.ClientCapabilities(
        fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=False)
    )
    rid, _, _ = state.start_request(
        "initialize", acp.InitializeRequest(protocol_version=1, client_capabilities=caps)
    )
    [event] = state.receive(
        line(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"protocolVersion": 1, "agentCapabilities": agent_caps or {}},
            }
        )
    )
    assert isinstance(event, IncomingResponse) and event.error is None
    return state


class TestCodec:
    @pytest.mark.parametrize(
        ("frame", "kind"),
        [
            (b'{"jsonrpc":"2.0","id":1,"method":"m"}', "request"),
            (b'{"jsonrpc":"2.0","id":"abc","method":"m","params":{}}', "request"),
            (b'{"jsonrpc":"2.0","method":"m"}', "notification"),
            (b'{"jsonrpc":"2.0","id":1,"result":null}', "response"),
            (b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}', "response"),
        ],
    )
    def test_kinds(self, frame: bytes, kind: str) -> None:
        env = decode_envelope(frame)
        assert isinstance(env, Envelope)
        has_method, has_id = isinstance(env.method, str), isinstance(env.id, int | str)
        found = "response" if not has_method else "request" if has_id else "notification"
        assert found == kind

    @pytest.mark.parametrize(
        ("frame", "code", "rid"),
        [
            (b"{not json", -32700, None),
            (b"[]", -32600, None),
            (b"[1,2]", -32600, None),
            (b"42", -32600, None),
            (b'"str"', -32600, None),
            (b"null", -32600, None),
            (b'{"jsonrpc":"1.0","id":5,"method":"m"}', -32600, 5),
            (b'{"id":5,"method":"m"}', -32600, 5),
            (b'{"jsonrpc":"2.0","id":6}', -32600, 6),
            (b'{"jsonrpc":"2.0","id":7,"result":1,"error":{}}', -32600, 7),
            (b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', -32600, None),
            (b'{"jsonrpc":"2.0","id":8,"method":3}', -32600, 8),
        ],
    )
    def test_invalid(self, frame: bytes, code: int, rid: object) -> None:
        msg = decode_envelope(frame)
        assert isinstance(msg, Invalid)
        assert (msg.code, msg.id) == (code, rid)

    def test_ids_keep_their_type(self) -> None:
        env = decode_envelope(b'{"jsonrpc":"2.0","id":"7","method":"m"}')
        assert isinstance(env, Envelope) and env.id == "7"


class TestStateMachine:
    def test_invalid_json_answered_with_null_id_and_connection_continues(self) -> None:
        state = initialized_agent()
        events = state.receive(
            b"{oops\n"
            + line(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "session/new",
                    "params": {"cwd": "/w", "mcpServers": []},
                }
            )
        )
        assert [r["error"]["code"] for r in replies(state)] == [-32700]
        requests = [e for e in events if isinstance(e, IncomingRequest)]
        assert len(requests) == 1 and requests[0].params == acp.NewSessionRequest(
            cwd="/w", mcp_servers=[]
        )

    def test_parse_error_reply_shape(self) -> None:
        state = initialized_agent()
        state.receive(b"garbage\n")
        [reply] = replies(state)
        assert (
            reply["jsonrpc"] == "2.0" and reply["id"] is None and reply["error"]["code"] == -32700
        )

    def test_unknown_method_and_notification(self) -> None:
        state = initialized_agent()
        events = state.receive(
            line({"jsonrpc": "2.0", "id": 9, "method": "no/such"})
            + line({"jsonrpc": "2.0", "method": "no/such"})
        )
        assert events == []
        [reply] = replies(state)
        assert reply["id"] == 9 and reply["error"]["code"] == -32601

    def test_extension_methods_are_routed(self) -> None:
        state = initialized_agent()
        events = state.receive(
            line({"jsonrpc": "2.0", "id": 1, "method": "_zed/x", "params": {"a": 1}})
            + line({"jsonrpc": "2.0", "method": "_zed/n"})
        )
        assert (
            isinstance(events[0], IncomingRequest)
            and events[0].spec is None
            and events[0].params == {"a": 1}
        )
        assert isinstance(events[1], IncomingNotification) and events[1].method == "_zed/n"

    def test_invalid_params_report_the_path(self) -> None:
        state = initialized_agent()
        assert (
            state.receive(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 3,
                        "method": "session/prompt",
                        "params": {"sessionId": "s", "prompt": [{"type": "text"}]},
                    }
                )
            )
            == []
        )
        [reply] = replies(state)
        assert reply["id"] == 3 and reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == "$.params.prompt[0]"

    def test_initialize_must_come_first(self) -> None:
        state = ProtocolState("agent")
        assert (
            state.receive(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "session/new",
                        "params": {"cwd": "/", "mcpServers": []},
                    }
                )
            )
            == []
        )
        [reply] = replies(state)
        assert reply["error"]["code"] == -32600 and reply["id"] == 1

    def test_response_with_unknown_or_null_id_is_ignored(self) -> None:
        state = initialized_client()
        assert (
            state.receive(
                line({"jsonrpc": "2.0", "id": 999, "result": {}})
                + line({"jsonrpc": "2.0", "id": None, "result": {}})
            )
            == []
        )
        assert replies(state) == []

    def test_response_matches_pending_and_is_typed(self) -> None:
        state = initialized_client()
        rid, frame, _ = state.start_request(
            "session/new", acp.NewSessionRequest(cwd="/w", mcp_servers=[])
        )
        assert json.loads(frame) == {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "session/new",
            "params": {"cwd": "/w", "mcpServers": []},
        }
        [event] = state.receive(
            line({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1", "extra": True}})
        )
        assert isinstance(event, IncomingResponse) and event.result == acp.NewSessionResponse(
            session_id="s1"
        )

    def test_error_response(self) -> None:
        state = initialized_client()
        rid, _, _ = state.start_request(
            "session/new", acp.NewSessionRequest(cwd="/w", mcp_servers=[])
        )
        [event] = state.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {
                        "code": -32000,
                        "message": "Authentication required",
                        "data": {"x": 1},
                    },
                }
            )
        )
        assert isinstance(event, IncomingResponse) and isinstance(event.error, RequestError)
        assert (event.error.code, event.error.data) == (-32000, {"x": 1})

    def test_null_result_accepted_for_empty_results(self) -> None:
        state = initialized_client()
        rid, _, _ = state.start_request("authenticate", acp.AuthenticateRequest(method_id="m"))
        [event] = state.receive(line({"jsonrpc": "2.0", "id": rid, "result": None}))
        assert isinstance(event, IncomingResponse) and event.result == acp.AuthenticateResponse()

    def test_cancel_request_event(self) -> None:
        state = initialized_agent()
        [event] = state.receive(
            line({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}})
        )
        assert event == IncomingCancel(4)

    def test_outbound_cancel_forgets_the_call(self) -> None:
        state = initialized_client()
        rid, _, _ = state.start_request(
            "session/new", acp.NewSessionRequest(cwd="/w", mcp_servers=[])
        )
        frame = state.cancel_outbound(rid)
        assert frame is not None and json.loads(frame) == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": rid},
        }
        assert (
            state.receive(line({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "late"}}))
            == []
        )

    def test_gates_on_the_sending_side(self) -> None:
        state = initialized_client({"loadSession": False, "sessionCapabilities": {"list": {}}})
        with pytest.raises(CapabilityError, match="loadSession|load_session"):
            state.start_request(
                "session/load", acp.LoadSessionRequest(session_id="s", cwd="/", mcp_servers=[])
            )
        state.start_request("session/list", acp.ListSessionsRequest())
        agent = initialized_agent()  # the client advertised no fs/terminal
        with pytest.raises(CapabilityError):
            agent.start_request(
                "fs/read_text_file", acp.ReadTextFileRequest(session_id="s", path="/x")
            )
        with pytest.raises(CapabilityError):
            agent.start_request(
                "terminal/create", acp.CreateTerminalRequest(session_id="s", command="ls")
            )

    def test_gate_answers_follow_capabilities_set_later(self) -> None:
        # Gate checks are cached per gate; setting capabilities must reset that cache.
        agent = initialized_agent()
        read = acp.ReadTextFileRequest(session_id="s", path="/x")
        with pytest.raises(CapabilityError):
            agent.start_request("fs/read_text_file", read)
        agent.peer_capabilities = acp.ClientCapabilities(
            fs=acp.FileSystemCapabilities(read_text_file=True)
        )
        agent.start_request("fs/read_text_file", read)
        agent.peer_capabilities = acp.ClientCapabilities()
        with pytest.raises(CapabilityError):
            agent.start_request("fs/read_text_file", read)

        client = initialized_client()  # advertised fs.readTextFile
        request = {
            "jsonrpc": "2.0",
            "method": "fs/read_text_file",
            "params": {"sessionId": "s", "path": "/x"},
        }
        [event] = client.receive(line({**request, "id": 1}))
        assert isinstance(event, IncomingRequest)
        client.local_capabilities = acp.ClientCapabilities()
        assert client.receive(line({**request, "id": 2})) == []
        [reply] = replies(client)
        assert (reply["id"], reply["error"]["code"]) == (2, -32601)

    def test_client_cannot_send_before_initialize(self) -> None:
        with pytest.raises(CapabilityError, match="initialize"):
            ProtocolState("client").start_request(
                "session/new", acp.NewSessionRequest(cwd="/", mcp_servers=[])
            )

    def test_gates_on_the_receiving_side(self) -> None:
        state = initialized_agent()  # advertised no loadSession
        assert (
            state.receive(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "session/load",
                        "params": {"sessionId": "s", "cwd": "/", "mcpServers": []},
                    }
                )
            )
            == []
        )
        [reply] = replies(state)
        assert reply["error"]["code"] == -32601
        client = initialized_client()  # advertised fs read but not write
        events = client.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "fs/write_text_file",
                    "params": {"sessionId": "s", "path": "/x", "content": ""},
                }
            )
        )
        assert events == [] and replies(client)[0]["error"]["code"] == -32601
        [ok] = client.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "fs/read_text_file",
                    "params": {"sessionId": "s", "path": "/x"},
                }
            )
        )
        assert isinstance(ok, IncomingRequest)

    def test_oversized_line(self) -> None:
        state = ProtocolState("agent", max_message_size=1000)
        big = (
            b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"x":"'
            + b"a" * 5000
            + b'"}}\n'
        )
        events = state.receive(big + b'{"jsonrpc":"2.0","id":"q","method":"nope"}\n')
        assert events == []
        codes = [(r["id"], r["error"]["code"]) for r in replies(state)]
        assert codes == [(7, -32600), ("q", -32601)]
        state2 = ProtocolState("agent", max_message_size=100)
        state2.receive(b'{"params":"' + b"b" * 500 + b'"}\n')
        assert [(r["id"], r["error"]["code"]) for r in replies(state2)] == [(None, -32700)]

    def test_seed_aliases_normalised(self) -> None:
        state = ProtocolState("agent")
        [event] = state.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {"protocolVersion": "1", "capabilities": {"fs": {"read": True}}},
                }
            )
        )
        assert isinstance(event, IncomingRequest)
        assert event.params.protocol_version == 1
        assert event.params.client_capabilities.fs.read_text_file is True

    def test_unknown_session_update_is_kept(self) -> None:
        state = initialized_client()
        [event] = state.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": "s", "update": {"sessionUpdate": "_custom", "x": 1}},
                }
            )
        )
        assert isinstance(event, IncomingNotification)
        assert isinstance(event.params.update, UnknownSessionUpdate)
        assert event.params.update.data == {"sessionUpdate": "_custom", "x": 1}

    def test_framing_content_length_detected(self) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": "/", "mcpServers": []},
            }
        ).encode()
        fresh = ProtocolState("agent")
        fresh.initialized = True
        events = fresh.receive(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert len(events) == 1 and isinstance(events[0], IncomingRequest)


class TestPipelinedAfterInitialize:
    """A client may send requests before `initialize` is answered (a file of requests does):
    they wait for the answer, then run in order; if initialize fails they are refused."""

    INIT = line(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    NEW = line(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/w", "mcpServers": []},
        }
    )
    CANCEL = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})

    def test_they_wait_for_the_answer_then_come_in_order(self) -> None:
        state = ProtocolState("agent")
        [init] = state.receive(self.INIT + self.NEW + self.CANCEL)
        assert isinstance(init, IncomingRequest) and init.method == "initialize"
        assert replies(state) == []  # not refused: waiting
        state.result(
            0,
            "initialize",
            acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities()),
        )
        events = state.take_deferred()
        assert [getattr(e, "method", None) for e in events] == ["session/new", "session/cancel"]
        assert replies(state) == []

    def test_the_next_receive_replays_them_first_when_nobody_asked(self) -> None:
        state = ProtocolState("agent")
        state.receive(self.INIT + self.NEW)
        state.result(
            0,
            "initialize",
            acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities()),
        )
        events = state.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/new",
                    "params": {"cwd": "/x", "mcpServers": []},
                }
            )
        )
        assert [e.id for e in events if isinstance(e, IncomingRequest)] == [1, 2]

    def test_a_failed_initialize_refuses_what_waited(self) -> None:
        state = ProtocolState("agent")
        state.receive(self.INIT + self.NEW)
        state.error(0, RequestError(-32603, "Internal error"))
        assert state.take_deferred() == []
        [reply] = replies(state)
        assert reply["id"] == 1 and reply["error"]["code"] == -32600

    def test_an_initialize_with_invalid_params_does_not_hold_anything(self) -> None:
        state = ProtocolState("agent")
        state.receive(
            line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}) + self.NEW
        )
        assert [(r["id"], r["error"]["code"]) for r in replies(state)] == [(0, -32602), (1, -32600)]

    def test_what_may_wait_is_bounded(self) -> None:
        from acpstack.wire._connection import DEFERRED_LIMIT

        state = ProtocolState("agent")
        big = line(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "session/new",
                "params": {"cwd": "/" + "a" * (DEFERRED_LIMIT // 3), "mcpServers": []},
            }
        )
        state.receive(self.INIT + big + big + big)
        refused = [r["id"] for r in replies(state)]
        assert refused == [5]  # the third one did not fit and was refused at once
