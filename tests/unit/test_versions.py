"""Protocol version negotiation in the sans-IO state machine (both roles), without I/O,
and the generated v2 types and method tables."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from acpstack.schema import (
    PROTOCOL_VERSIONS,
    UnknownSessionUpdate,
    convert,
    method_table,
    v2,
    v2_unstable,
)
from acpstack.schema import v1 as acp
from acpstack.wire import (
    CapabilityError,
    IncomingRequest,
    IncomingResponse,
    ProtocolState,
    RequestError,
)


def line(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def replies(state: ProtocolState) -> list[dict[str, Any]]:
    out = state.take_outgoing()
    return [json.loads(text) for text in out.splitlines() if text.strip()]


def initialize(state: ProtocolState, params: dict[str, Any], rid: int = 0) -> Any:
    return state.receive(
        line({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params})
    )


V2_PARAMS = {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}}


class TestAgentSide:
    @pytest.mark.parametrize(
        ("versions", "requested", "chosen"),
        [
            ((1, 2), 2, 2),
            ((1, 2), 1, 1),
            ((1, 2), 3, 2),
            ((1, 2), 65535, 2),
            ((1,), 2, 1),
            ((2,), 7, 2),
        ],
    )
    def test_highest_supported_at_or_below_the_request(
        self, versions: tuple[int, ...], requested: int, chosen: int
    ) -> None:
        state = ProtocolState("agent", versions=versions)
        params = (
            dict(V2_PARAMS, protocolVersion=requested) if requested >= 2 else {"protocolVersion": 1}
        )
        [event] = initialize(state, params)
        assert isinstance(event, IncomingRequest)
        assert state.version == chosen
        expected = v2.InitializeRequest if chosen == 2 else acp.InitializeRequest
        assert type(event.params) is expected

    @pytest.mark.parametrize(("versions", "requested"), [((2,), 1), ((1, 2), 0), ((2,), 0)])
    def test_none_fits(self, versions: tuple[int, ...], requested: int) -> None:
        state = ProtocolState("agent", versions=versions)
        assert initialize(state, {"protocolVersion": requested}) == []
        [error] = replies(state)
        assert error["error"]["code"] == -32022
        assert error["error"]["data"] == {"requested": requested, "supported": list(versions)}
        assert not state.deferring and state.version is None  # nothing waits on it
        # The client may try again on the same connection.
        [event] = initialize(state, V2_PARAMS, rid=1)
        assert isinstance(event, IncomingRequest) and state.version == 2

    def test_the_tables_switch_to_the_version_chosen(self) -> None:
        state = ProtocolState("agent", versions=(1, 2))
        [event] = initialize(state, V2_PARAMS)
        state.result(event.id, "initialize", _v2_answer())
        login = {"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {"methodId": "m"}}
        [event] = state.receive(line(login))
        assert isinstance(event, IncomingRequest)
        assert event.spec is not None and event.spec.handler == "v2_auth_login"
        assert isinstance(event.params, v2.LoginAuthRequest)
        load = {"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {}}
        assert state.receive(line(load)) == []
        assert replies(state)[0]["error"]["code"] == -32601  # gone in v2
        with pytest.raises(CapabilityError):  # and no client fs to ask in v2
            state.start_request("fs/read_text_file", {"sessionId": "s", "path": "/x"})

    def test_a_v2_request_answered_in_v1_is_downgraded(self) -> None:
        state = ProtocolState("agent", versions=(1,))
        caps = {"elicitation": {"form": {}}, "auth": {"terminal": {}}}
        [event] = initialize(state, dict(V2_PARAMS, capabilities=caps))
        params = event.params
        assert isinstance(params, acp.InitializeRequest)
        assert params.protocol_version == 2  # what was asked; the answer will say 1
        assert params.client_info == acp.Implementation(name="c", version="1")
        client = params.client_capabilities
        assert isinstance(client, acp.ClientCapabilities)
        assert client.terminal is False and client.fs.read_text_file is False
        assert client.auth.terminal is True and client.elicitation.form is not None
        # The answer says the version chosen, whatever the handler wrote.
        answer = acp.InitializeResponse(
            protocol_version=2, agent_capabilities=acp.AgentCapabilities()
        )
        assert (
            json.loads(state.result(event.id, "initialize", answer))["result"]["protocolVersion"]
            == 1
        )

    def test_v2_initialize_without_info_is_taken_leniently(self) -> None:
        # A client that sends v1's shape with version 2 (as older checkers do) still gets in.
        state = ProtocolState("agent", versions=(1, 2))
        [event] = initialize(state, {"protocolVersion": 2, "clientCapabilities": {"fs": {}}})
        assert event.params.info == v2.Implementation(name="unknown", version="unknown")

    def test_bad_versions_get_clear_errors(self) -> None:
        for bad in (-1, 70000, 1.5, None, [2]):
            state = ProtocolState("agent", versions=(1, 2))
            assert initialize(state, {"protocolVersion": bad}) == []
            [error] = replies(state)
            assert error["error"]["code"] == -32602, bad

    def test_the_version_of_a_connection_cannot_change(self) -> None:
        state = ProtocolState("agent", versions=(1, 2))
        [event] = initialize(state, V2_PARAMS)
        state.result(event.id, "initialize", _v2_answer())
        assert initialize(state, {"protocolVersion": 1}, rid=5) == []
        assert replies(state)[0]["error"]["code"] == -32600

    def test_v1_seed_spellings_stay_off_v2(self) -> None:
        # v1 accepts seed spellings (a stdio MCP server without `type`); v2 requires its
        # `type`, and a v1 rewrite must never strip it.
        state = ProtocolState("agent", versions=(2,))
        [event] = initialize(state, V2_PARAMS)
        state.result(event.id, "initialize", _v2_answer())
        server = {"type": "stdio", "name": "s", "command": "/bin/true", "workingDirectory": "/"}
        new = {"cwd": "/tmp", "mcpServers": [server]}
        [event] = state.receive(
            line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new})
        )
        assert isinstance(event.params.mcp_servers[0], v2.McpServerStdio)


class TestProxyHandshake:
    """A conductor opens a connection to a proxy with `proxy/initialize` (unstable proxy
    chains): the same params and answer as `initialize`, and the handshake just as well."""

    def request(self, state: ProtocolState, method: str, params: Any, rid: int = 0) -> Any:
        return state.receive(
            line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        )

    @pytest.mark.parametrize("method", ["proxy/initialize", "_proxy/initialize"])
    def test_agent_side_takes_it_first_and_negotiates(self, method: str) -> None:
        state = ProtocolState("agent", unstable=True, versions=(1, 2))
        [event] = self.request(state, method, dict(V2_PARAMS, protocolVersion=3))
        assert isinstance(event, IncomingRequest) and event.method == "proxy/initialize"
        assert state.version == 2 and state.deferring  # what follows waits for the answer
        assert type(event.params) is v2_unstable.InitializeProxyRequest
        state.result(event.id, event.method, _v2_answer())
        assert state.initialized and not state.deferring
        [new] = self.request(state, "session/new", {"cwd": "/tmp"}, rid=1)
        assert isinstance(new.params, v2.NewSessionRequest)

    def test_agent_side_none_fits(self) -> None:
        state = ProtocolState("agent", unstable=True, versions=(2,))
        assert self.request(state, "proxy/initialize", {"protocolVersion": 1}) == []
        [error] = replies(state)
        assert error["error"]["code"] == -32022 and not state.initialized

    def test_a_stable_connection_does_not_know_it(self) -> None:
        state = ProtocolState("agent", versions=(1, 2))
        assert self.request(state, "proxy/initialize", {"protocolVersion": 1}) == []
        assert replies(state)[0]["error"]["code"] == -32601
        assert state.version is None and not state.deferring

    def test_client_side_sends_it_first_and_goes_on_in_the_answer(self) -> None:
        state = ProtocolState("client", unstable=True, versions=(1, 2))
        rid, _, _ = state.start_request("proxy/initialize", {"protocolVersion": 1})
        answer = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
        [event] = state.receive(line({"jsonrpc": "2.0", "id": rid, "result": answer}))
        assert isinstance(event, IncomingResponse)
        assert state.initialized and state.version == 1
        assert state.peer_capabilities.load_session is True
        state.start_request(
            "session/load", acp.LoadSessionRequest(session_id="s", cwd="/", mcp_servers=[])
        )


class TestClientSide:
    def ask(self, state: ProtocolState, params: Any) -> int:
        rid, _, _ = state.start_request("initialize", params)
        return int(rid)  # type: ignore[arg-type]

    def test_asked_2_answered_2(self) -> None:
        state = ProtocolState("client", versions=(1, 2))
        rid = self.ask(
            state,
            v2.InitializeRequest(protocol_version=2, info=v2.Implementation(name="c", version="1")),
        )
        result = {
            "protocolVersion": 2,
            "info": {"name": "a", "version": "1"},
            "capabilities": {"session": {}},
        }
        [event] = state.receive(line({"jsonrpc": "2.0", "id": rid, "result": result}))
        assert isinstance(event, IncomingResponse) and isinstance(
            event.result, v2.InitializeResponse
        )
        assert state.version == 2 and state.initialized
        state.start_request("session/new", v2.NewSessionRequest(cwd="/tmp"))  # gate: session

    def test_asked_2_answered_1_goes_on_in_v1(self) -> None:
        state = ProtocolState("client", versions=(1, 2))
        elicitation = v2.ElicitationCapabilities(form=v2.ElicitationFormCapabilities())
        params = v2.InitializeRequest(
            protocol_version=2,
            info=v2.Implementation(name="c", version="1"),
            capabilities=v2.ClientCapabilities(elicitation=elicitation),
        )
        rid = self.ask(state, params)
        [event] = state.receive(
            line({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}})
        )
        assert isinstance(event.result, acp.InitializeResponse)
        assert state.version == 1
        # What we offered is what the v1 agent read: no fs, no terminals.
        caps = state.local_capabilities
        assert isinstance(caps, acp.ClientCapabilities)
        assert caps.terminal is False and caps.elicitation.form is not None
        read = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "fs/read_text_file",
            "params": {"sessionId": "s", "path": "/x"},
        }
        assert state.receive(line(read)) == []
        assert replies(state)[0]["error"]["code"] == -32601
        state.start_request(
            "session/load",
            acp.LoadSessionRequest(session_id="s", cwd="/", mcp_servers=[]),
            check_gate=False,
        )

    @pytest.mark.parametrize("answer", [2, 3, 0])
    def test_an_answer_we_cannot_go_on_in(self, answer: int) -> None:
        state = ProtocolState("client", versions=(1, 2))
        rid = self.ask(state, acp.InitializeRequest(protocol_version=1))
        [event] = state.receive(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"protocolVersion": answer, "info": {"name": "a", "version": "1"}},
                }
            )
        )
        assert isinstance(event, IncomingResponse)
        assert state.version is None  # AgentPeer.initialize refuses it (ProtocolVersionError)


def test_method_tables() -> None:
    assert PROTOCOL_VERSIONS == (1, 2)
    table = {spec.name: spec for spec in method_table(False, version=2)}
    assert "session/load" not in table and "fs/read_text_file" not in table
    assert table["auth/login"].params is v2.LoginAuthRequest
    assert table["session/prompt"].result is v2.PromptResponse
    assert table["session/new"].gate == ("session",)
    assert table["session/delete"].gate == ("session", "delete")
    assert all(spec.handler.startswith("v2_") for spec in table.values())
    unstable = {spec.name for spec in method_table(True, version=2)}
    assert {"session/fork", "providers/list"} <= unstable
    with pytest.raises(ValueError, match="version 1 only"):
        method_table(True, ("nes",), version=2)
    with pytest.raises(ValueError, match="unknown ACP protocol version"):
        method_table(False, version=3)
    with pytest.raises(ValueError, match="unsupported ACP protocol versions"):
        ProtocolState("agent", versions=(3,))


class TestV2Types:
    def decode(self, update: dict[str, Any]) -> Any:
        body = msgspec.json.decode(json.dumps({"sessionId": "s", "update": update}))
        return convert(body, v2.UpdateSessionNotification).update  # (as the library decodes)

    def test_state_updates_are_a_union_inside_a_union(self) -> None:
        idle = self.decode(
            {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}
        )
        assert isinstance(idle, v2.SessionUpdateIdleStateUpdate)
        assert isinstance(idle, v2.IdleStateUpdate) and idle.stop_reason == "cancelled"
        encoded = json.loads(msgspec.json.encode(v2.SessionUpdateRunningStateUpdate()))
        assert encoded == {"sessionUpdate": "state_update", "state": "running"}

    def test_open_unions_keep_what_they_do_not_know(self) -> None:
        unknown = self.decode({"sessionUpdate": "_mine", "x": 1})
        assert unknown == UnknownSessionUpdate(
            session_update="_mine", data={"sessionUpdate": "_mine", "x": 1}
        )
        paused = self.decode({"sessionUpdate": "state_update", "state": "_paused"})
        assert isinstance(paused, UnknownSessionUpdate) and paused.data["state"] == "_paused"
        status = self.decode(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t",
                "status": "_queued",
                "kind": "_x",
            }
        )
        assert (status.status, status.kind) == ("_queued", "_x")

    def test_known_variants_are_still_strict(self) -> None:
        with pytest.raises(msgspec.ValidationError):
            self.decode(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
            )  # no messageId
        with pytest.raises(msgspec.ValidationError):
            self.decode({"sessionUpdate": "tool_call_update", "status": "completed"})  # no id

    def test_leniency_marks_apply_inside_updates(self) -> None:
        # Through the wire's decoding (strict first, then the schema's leniency marks).
        from acpstack.wire._decode import decode_typed

        def lenient(update: dict[str, Any]) -> Any:
            raw = msgspec.Raw(json.dumps({"sessionId": "s", "update": update}).encode())
            return decode_typed(raw, v2.UpdateSessionNotification, "session/update").update

        # "A malformed stopReason is treated as the agent not reporting one" (v2 schema).
        idle = lenient({"sessionUpdate": "state_update", "state": "idle", "stopReason": 3})
        assert isinstance(idle, v2.IdleStateUpdate) and idle.stop_reason is msgspec.UNSET
        chunk = lenient(
            {
                "sessionUpdate": "user_message",
                "messageId": "m",
                "content": [{"type": "text"}, {"type": "text", "text": "ok"}],
            }
        )
        assert chunk.content == [v2.TextContent(text="ok")]  # the invalid item skipped

    def test_error_data_is_a_typed_arm_only_when_nothing_is_lost(self) -> None:
        def error_data(data: dict[str, Any]) -> Any:
            idle = self.decode(
                {
                    "sessionUpdate": "state_update",
                    "state": "idle",
                    "stopReason": "error",
                    "error": {"code": -32010, "message": "busy", "data": data},
                }
            )
            return idle.error.data

        assert error_data({"sessionId": "s"}) == v2.SessionNotFoundErrorData(session_id="s")
        busy = {"reason": "session_busy", "sessionId": "s"}
        assert error_data(busy) == busy  # not "session not found" data without its reason
        versions = {"requested": 3, "supported": [2], "_meta": {"k": 1}}
        assert isinstance(error_data(versions), v2.UnsupportedProtocolVersionErrorData)
        assert error_data({"requested": 3, "supported": [2], "why": "x"})["why"] == "x"

    def test_v2_types_are_not_v1_types(self) -> None:
        assert not issubclass(v2.TextContent, acp.TextContent)
        assert v2.TextContent.__module__ == "acpstack.schema._generated_v2"


def _v2_answer() -> v2.InitializeResponse:
    return v2.InitializeResponse(
        protocol_version=2,
        info=v2.Implementation(name="a", version="1"),
        capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
    )


def test_request_error_code() -> None:
    from acpstack.wire import UNSUPPORTED_PROTOCOL_VERSION

    assert UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert RequestError(-32022, "x").code == -32022
