"""Lines that used to end a connection: each gets its JSON-RPC answer and the state goes on.

Every case here raised out of `ProtocolState.receive` before (UnicodeDecodeError,
RecursionError, msgspec errors from the fallback decode), which made the runtime stop
reading: the agent exited and the chat dropped the agent.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acpstack.schema import v1 as acp
from acpstack.wire import DroppedMessage, IncomingRequest, IncomingResponse, ProtocolState

# Deeper than msgspec decodes on every CPython here (3.11 stops near 1,000 levels, 3.12 near
# a few thousand), as deep as the fuzzer goes.
DEEP = b"[" * 20_000 + b"]" * 20_000
HUGE_INT = b"9" * 5000


def replies(state: ProtocolState) -> list[dict]:
    return [json.loads(line) for line in state.take_outgoing().splitlines() if line.strip()]


def agent() -> ProtocolState:
    state = ProtocolState("agent")
    [event] = state.receive(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    assert isinstance(event, IncomingRequest)
    state.result(
        0,
        "initialize",
        acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities()),
    )
    return state


NEW_SESSION = (
    b'{"jsonrpc":"2.0","id":99,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}\n'
)


def still_serves(state: ProtocolState) -> None:
    [event] = state.receive(NEW_SESSION)
    assert isinstance(event, IncomingRequest) and event.id == 99


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/w/\xff\xfe","mcpServers":[]}}',
            -32700,
        ),
        # Inside an unknown key msgspec never reads the bytes; it is still not JSON text.
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"x":"\xff"}}',
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"x":'
            + DEEP
            + b"}}",
            -32700,
        ),
        (b'{"jsonrpc":"2.0","id":7,"method":"_ext/x","params":' + DEEP + b"}", -32700),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a"}],"x":'
            + DEEP
            + b"}}",
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a","annotations":{"priority":1e400}}]}}',
            -32602,
        ),
        (b'{"jsonrpc":"2.0","id":7,"method":"fs/x","params":{}}', -32601),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/set_mode","params":{"sessionId":"s","modeId":'
            + HUGE_INT
            + b"}}",
            -32602,
        ),
        (b'{"jsonrpc":"2.0","id":7,"method":"_ext/x","params":{"n":' + HUGE_INT + b"}}", -32602),
        (b'{"jsonrpc":"2.0","id":7,"method":"_ext/x","params":{"n":1e400}}', -32602),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/set_mode","params":{"sessionId":99999999999999999999,"modeId":"m"}}',
            -32602,
        ),
    ],
)
def test_a_poisoned_request_gets_its_error_with_its_id(line: bytes, code: int) -> None:
    state = agent()
    assert state.receive(line + b"\n") == []
    [reply] = replies(state)
    assert reply["id"] == 7 and reply["error"]["code"] == code
    still_serves(state)


def test_invalid_utf8_in_a_key_does_not_turn_a_request_into_a_notification() -> None:
    state = agent()
    events = state.receive(
        b'{"jsonrpc":"2.0","\xff":1,"id":8,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}\n'
    )
    assert not [e for e in events if isinstance(e, IncomingRequest)]
    [reply] = replies(state)
    assert reply["error"]["code"] == -32700 and reply["id"] == 8


def test_an_id_nested_in_params_is_never_used_to_answer() -> None:
    state = agent()
    [dropped] = state.receive(
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"id":5,"sessionId":"s","x":"\xff"}}\n'
    )
    assert (
        isinstance(dropped, DroppedMessage)
        and dropped.method == "session/cancel"
        and dropped.session_id == "s"
    )
    [reply] = replies(state)
    assert reply["id"] is None and reply["error"]["code"] == -32700


@pytest.mark.parametrize(
    "params",
    [
        b'{"sessionId":"s","x":' + DEEP + b"}",
        b'{"sessionId":' + HUGE_INT + b"}",
        b'{"sessionId":1e400}',
    ],
)
def test_a_poisoned_notification_is_dropped_reported_and_never_answered_by_id(
    params: bytes,
) -> None:
    state = agent()
    events = state.receive(
        b'{"jsonrpc":"2.0","method":"session/cancel","params":' + params + b"}\n"
    )
    [dropped] = events
    assert isinstance(dropped, DroppedMessage) and dropped.method == "session/cancel"
    assert all(r["id"] is None for r in replies(state))
    still_serves(state)


@pytest.mark.parametrize(
    "result",
    [
        b'{"content":"\xff"}',
        b'{"content":' + DEEP + b"}",
        b'{"content":1e400}',
        b'{"content":' + HUGE_INT + b"}",
        b"[" * 5000,
    ],
)
def test_a_poisoned_response_fails_only_its_call(result: bytes) -> None:
    state = ProtocolState("client")
    caps = acp.ClientCapabilities(fs=acp.FileSystemCapabilities(read_text_file=True))
    state.start_request(
        "initialize", acp.InitializeRequest(protocol_version=1, client_capabilities=caps)
    )
    state.receive(
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}\n'
    )
    first, _, _ = state.start_request(
        "session/new", acp.NewSessionRequest(cwd="/w", mcp_servers=[])
    )
    second, _, _ = state.start_request(
        "session/new", acp.NewSessionRequest(cwd="/w", mcp_servers=[])
    )
    events = state.receive(b'{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (first, result))
    [failed] = events
    assert (
        isinstance(failed, IncomingResponse)
        and failed.call.id == first
        and failed.error is not None
    )
    assert failed.error.code in (-32700, -32602)
    assert replies(state) == []  # a response is never answered
    [ok] = state.receive(b'{"jsonrpc":"2.0","id":%d,"result":{"sessionId":"s2"}}\n' % second)
    assert isinstance(ok, IncomingResponse) and ok.error is None and ok.result.session_id == "s2"


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0"-"id":%d,"result":null}\n',  # the comma before the id damaged
        b'{"jsonrpc":"2.0" "id":%d,"result":{"content":"x"}}\n',
        b'{"jsonrpc":"2.0","id":%d]\n',  # cut short after the id
    ],
)
def test_a_response_damaged_around_its_id_still_fails_its_call(line: bytes) -> None:
    # Seen in a fuzzing run: the call otherwise waits for an answer that already came.
    state = ProtocolState("client")
    rid, _, _ = state.start_request("initialize", acp.InitializeRequest(protocol_version=1))
    [failed] = state.receive(line % rid)
    assert isinstance(failed, IncomingResponse) and failed.call.id == rid
    assert failed.error is not None
    assert replies(state) == []


def test_a_poisoned_error_object_fails_its_call_with_a_clear_error() -> None:
    state = ProtocolState("client")
    rid, _, _ = state.start_request("initialize", acp.InitializeRequest(protocol_version=1))
    [event] = state.receive(
        b'{"jsonrpc":"2.0","id":%d,"error":{"code":1e400,"message":"x"}}\n' % rid
    )
    assert isinstance(event, IncomingResponse) and event.error is not None
    assert event.error.message == "Malformed error from peer"


def test_a_stray_poisoned_response_is_not_answered() -> None:
    state = agent()
    assert state.receive(b'{"jsonrpc":"2.0","id":12345,"result":{"x":"\xff"}}\n') == []
    assert replies(state) == []


def test_frames_after_a_poisoned_one_in_the_same_read_are_kept() -> None:
    state = agent()
    chunk = (
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":'
        + DEEP
        + b"}\n"
        + b"\xff\xfe\n"
        + NEW_SESSION
    )
    events = state.receive(chunk)
    assert [e.id for e in events if isinstance(e, IncomingRequest)] == [99]
    assert [r["error"]["code"] for r in replies(state)] == [-32700, -32700]


def test_an_oversized_notification_is_reported_to_the_application() -> None:
    state = ProtocolState("client", max_message_size=1024)
    big = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
        + b"a" * 5000
        + b'"}}}}\n'
    )
    [dropped] = state.receive(big)
    assert isinstance(dropped, DroppedMessage)
    assert (dropped.reason, dropped.method, dropped.session_id) == (
        "too_large",
        "session/update",
        "s1",
    )
    assert dropped.size == len(big) - 1


def test_a_notification_with_invalid_params_is_reported_to_the_application() -> None:
    state = ProtocolState("client")
    [dropped] = state.receive(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan"}}}\n'
    )
    assert (
        isinstance(dropped, DroppedMessage)
        and dropped.reason == "invalid_params"
        and dropped.session_id == "s1"
    )


@pytest.mark.parametrize(
    ("line", "code", "detail"),
    [
        # msgspec refuses an array (or a bad id) before reading on: whether the line is JSON
        # at all decides between -32700 and -32600.
        (b"[1,", -32700, "invalid JSON: Input data was truncated"),
        (b"[" * 1000, -32700, ""),  # too deep, or cut short, depending on the interpreter
        (b"[" * 20_000, -32700, "JSON nested too deeply"),
        (b"[1, 2] x", -32700, "trailing characters"),
        (b'{"jsonrpc":"2.0","id":1.5,', -32700, "invalid JSON: Input data was truncated"),
        (b"[1, 2]", -32600, "not a JSON-RPC message"),
        (DEEP, -32700, "JSON nested too deeply"),
        (b'{"jsonrpc":"2.0","id":1e400,"method":"x"}', -32600, "Number out of range"),
        (b'{"jsonrpc":"2.0","id":' + HUGE_INT + b',"method":"x"}', -32600, "out of range"),
    ],
)
def test_a_line_that_is_not_json_is_a_parse_error_whatever_its_start(
    line: bytes, code: int, detail: str
) -> None:
    state = agent()
    assert [e for e in state.receive(line + b"\n") if not isinstance(e, DroppedMessage)] == []
    [reply] = replies(state)
    assert reply["id"] is None and reply["error"]["code"] == code, reply
    assert detail in reply["error"]["data"]["detail"]
    still_serves(state)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/w","mcpServers":[]},"x":"\\ud800"}',
        b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"\\ud800 and more text","mcpServers":[]}}',
        b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"\\udc00","mcpServers":[]}}',
    ],
)
def test_a_lone_surrogate_escape_is_named_for_what_it_is(line: bytes) -> None:
    state = agent()
    assert state.receive(line + b"\n") == []
    [reply] = replies(state)
    assert reply["id"] == 7 and reply["error"]["code"] == -32700
    detail = reply["error"]["data"]["detail"]
    assert detail.startswith("invalid JSON: lone UTF-16 surrogate escape \\u"), detail


def test_other_parse_errors_keep_their_detail() -> None:
    state = agent()
    # An escaped backslash before "ud800" is no escape; a pair is no lone surrogate: these
    # lines are only cut short. A bad escape before a lone surrogate is the first error.
    state.receive(b'{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"\\\\ud800"\n')
    state.receive(b'{"jsonrpc":"2.0","id":8,"method":"x","params":{"a":"\\ud800\\udc00\n')
    state.receive(b'{"jsonrpc":"2.0","id":9,"method":"x","params":{"a":"\\q","b":"\\ud800"}}\n')
    assert [r["error"]["data"]["detail"] for r in replies(state)] == [
        "invalid JSON: Input data was truncated",
        "invalid JSON: Input data was truncated",
        "invalid JSON: JSON is malformed: invalid escaped character (byte 53)",
    ]


@pytest.mark.parametrize(
    ("line", "method", "path"),
    [
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"sk-SECRET","mcpServers":7}}',
            "session/new",
            "$.params.mcpServers",
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"_ext/x","params":{"n":1e400,"k":"sk-SECRET"}}',
            "_ext/x",
            "$.params",
        ),
    ],
)
def test_a_request_refused_for_its_params_is_logged_once_without_them(
    line: bytes, method: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    state = agent()
    with caplog.at_level("DEBUG", logger="acpstack"):
        assert state.receive(line + b"\n") == []
    [reply] = replies(state)
    assert reply["id"] == 7 and reply["error"]["code"] == -32602
    [record] = [r for r in caplog.records if r.levelname != "DEBUG"]
    assert (record.levelname, record.name) == ("WARNING", "acpstack.wire")
    assert record.getMessage() == f"refused request {method!r} (id 7): invalid params at {path}"
    assert "SECRET" not in caplog.text


def test_a_refused_initialize_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    state = ProtocolState("agent")
    with caplog.at_level("DEBUG", logger="acpstack"):
        state.receive(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":[]}\n')
    [reply] = replies(state)
    assert reply["error"]["code"] == -32602
    [record] = [r for r in caplog.records if r.levelname != "DEBUG"]
    assert record.levelname == "WARNING"
    assert record.getMessage() == "refused request 'initialize' (id 0): invalid params at $.params"


UNCLOSED_STRING = """
from acpstack.schema import v1 as acp
from acpstack.wire import ProtocolState
state = ProtocolState("agent")
state.receive(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\\n')
answer = acp.InitializeResponse(protocol_version=1, agent_capabilities=acp.AgentCapabilities())
state.result(0, "initialize", answer)
state.take_outgoing()
state.receive(b'{"jsonrpc":"2.0","id":7,"method":"m","params":"' + b'a\\\\"' * 300_000 + b"\\n")
print(state.take_outgoing().decode())
"""


def test_an_unclosed_string_full_of_quotes_costs_linear_time() -> None:
    # Recovering the id scans the line once: retrying an unclosed string from every quote in
    # it took 13 s over 60 KB (quadratic), and would not end over 1 MB. In a process of its
    # own, which the timeout can end (a regular expression does not let go of the GIL).
    done = subprocess.run(
        [sys.executable, "-c", UNCLOSED_STRING], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert (reply["id"], reply["error"]["code"]) == (7, -32700)
