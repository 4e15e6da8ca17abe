"""The fuzzer's oracle on its own: which replies of the target break "every request is
answered exactly once, and nothing else is answered". No process: lines are recorded as
sent (`note_sent`, what `send` does before writing) and replies are fed to the checker."""

from __future__ import annotations

import json
from typing import Any

from tools.fuzz._harness import Target
from tools.fuzz._mutate import Dup, dump, expectation, generated_request_ids, request_ids


def target() -> Target:
    return Target(["true"], cwd="/")  # never started


def sent(t: Target, message: Any) -> bytes:
    line = message if isinstance(message, bytes) else dump(message)
    t.note_sent(line, *expectation(line))
    return line


def reply(t: Target, message: dict[str, Any]) -> list[str]:
    """Feed one line of the target's output; the kinds of the violations it added."""
    before = len(t.violations)
    t._check_line(json.dumps(message).encode())
    return [v.kind for v in t.violations[before:]]


def result(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": None}


def error(rid: Any, code: int = -32600) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": "x"}}


def cancel(session_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}


def test_a_reply_to_a_notification_is_a_violation() -> None:
    t = target()
    sent(t, cancel("sess-42"))  # its sessionId is in the line, but it is no request id
    assert reply(t, result("sess-42")) == ["unexpected answer"]
    assert reply(t, error("sess-42")) == ["unexpected answer"]


def test_an_id_nested_in_params_is_no_request_id() -> None:
    t = target()
    sent(t, {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x", "id": 77}})
    sent(t, b'{"jsonrpc":"2.0","method":"session/cancel","params":{"id":78,"a":\xff}}')  # damaged
    assert reply(t, error(77)) == ["unexpected answer"]
    assert reply(t, error(78)) == ["unexpected answer"]


def test_a_duplicate_answer_is_a_violation() -> None:
    t = target()
    sent(t, {"jsonrpc": "2.0", "id": 7, "method": "_fuzz/ping", "params": {}})
    assert t.required
    assert reply(t, result(7)) == []
    assert reply(t, result(7)) == ["duplicate answer"]
    assert not t.required and t.stats.answers == 1


def test_a_damaged_request_may_be_answered_once() -> None:
    t = target()
    sent(t, b'{"jsonrpc":"2.0","id":"fz-1","method":"x","params":{"a":1e400}}')
    sent(t, b'{"jsonrpc":"2.0","id":12,"method":"x","params":{"a":"\xff"')  # truncated, not UTF-8
    assert not t.required  # a peer may refuse them without reading their ids
    assert reply(t, error("fz-1", -32602)) == []
    assert reply(t, error(12, -32700)) == []
    assert reply(t, error("fz-1", -32602)) == ["duplicate answer"]


def test_a_request_damaged_past_our_reading_may_still_be_answered_once_with_its_id() -> None:
    # Seen in a fuzzing run: bytes between "id" and its colon. The fuzzer's own reading
    # gives up; the target's more lenient one reads the id the request was sent with.
    t = target()
    message = {"jsonrpc": "2.0", "method": "session/list", "params": {}, "id": 10000296480}
    line = dump(message).replace(b'"id":', b'"id"\xa0u\xf2:')
    assert request_ids(line) == []
    t.note_sent(line, *expectation(line), generated_request_ids(message))
    assert reply(t, error(10000296480, -32700)) == []
    assert reply(t, error(10000296480, -32700)) == ["duplicate answer"]


def test_damage_that_makes_a_request_id_read_as_one_of_the_peers_is_still_ours() -> None:
    # Seen in a fuzzing run: bytes inserted after "10" of id 10000373396. The line now says
    # id 10, which is also the id of a request of the target that we answered.
    t = target()
    t.note_response_sent(10)
    message = {"jsonrpc": "2.0", "method": "session/list", "params": {}, "id": 10000373396}
    line = dump(message).replace(b":10000373396", b":10]\xa5\x84\xc7000373396")
    t.note_sent(line, *expectation(line), generated_request_ids(message))
    assert reply(t, error(10, -32700)) == []
    assert reply(t, error(10, -32700)) == ["duplicate answer"]


def test_the_generated_ids_are_those_of_requests_only() -> None:
    request = {"jsonrpc": "2.0", "id": 3, "method": "x"}
    assert generated_request_ids(request) == [3]
    assert generated_request_ids(Dup([*request.items(), ("id", 3), ("id", "3")])) == [3, "3"]
    assert generated_request_ids([request, {"jsonrpc": "2.0", "id": 4, "method": "y"}]) == [3, 4]
    assert generated_request_ids({"jsonrpc": "2.0", "id": 5, "result": {}}) == []  # a response
    assert generated_request_ids(cancel("s")) == []  # a notification
    nested = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"id": 6}}
    assert generated_request_ids(nested) == []
    assert generated_request_ids({"jsonrpc": "2.0", "id": {}, "method": "x"}) == []
    assert generated_request_ids({"jsonrpc": "2.0", "id": True, "method": "x"}) == []


def test_ids_are_compared_as_json_values() -> None:
    t = target()
    sent(t, {"jsonrpc": "1.0", "id": 5, "method": "x"})  # invalid: may be answered with its id
    assert reply(t, error("5")) == ["unexpected answer"]  # a string is not the number 5
    assert reply(t, error(5)) == []


def test_a_batch_answers_each_of_its_requests_once() -> None:
    t = target()
    request = {"jsonrpc": "2.0", "id": 9, "method": "x"}
    sent(t, [request, {"jsonrpc": "2.0", "method": "y"}, request])
    assert request_ids(dump([request, request])) == [9, 9]
    assert reply(t, error(9)) == [] and reply(t, error(9)) == []
    assert reply(t, error(9)) == ["duplicate answer"]


def test_a_reply_to_a_response_is_a_violation() -> None:
    t = target()
    sent(t, {"jsonrpc": "2.0", "id": 31, "result": {}})  # a stray response of ours
    t.note_response_sent(4)  # our answer to the target's request 4, damaged
    t.note_sent(b'{"jsonrpc":"2.0","id":4,"result":{"content":"\xff"}}', "response")
    assert reply(t, error(31)) == ["unexpected answer"]
    assert reply(t, error(4, -32700)) == ["unexpected answer"]
    assert "a response we sent" in t.violations[-1].detail


def test_id_null_is_fine_on_an_error_and_on_the_answer_to_a_null_id_request() -> None:
    t = target()
    sent(t, b"\xff\xfe not json")
    assert reply(t, error(None, -32700)) == []
    assert reply(t, result(None)) == ["unexpected answer"]  # no request had id null
    sent(t, {"jsonrpc": "2.0", "id": None, "method": "_fuzz/ping", "params": {}})
    assert reply(t, result(None)) == []  # ACP v1 allows a null request id
    assert reply(t, result(None)) == ["unexpected answer"]
    assert t.stats.null_id_errors == 1
