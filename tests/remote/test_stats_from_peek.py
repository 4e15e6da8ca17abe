"""The server's metrics count stop reasons and error codes from the routing peek of each
answer (no second decode): the outcomes must come out as a full decode would give them."""

from __future__ import annotations

from acpstack.server._metrics import ServerStats
from acpstack.transports import peek_envelope


def said(stats: ServerStats, frame: bytes, turn: bool) -> None:
    stats.agent_said(peek_envelope(frame), turn)


def test_turns_are_counted_by_stop_reason_and_errors_by_code() -> None:
    stats = ServerStats()
    said(stats, b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}', True)
    said(stats, b'{"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}', True)
    said(stats, b'{"id":3,"result":{"_meta":{"stopReason":"x"},"stopReason":"max_tokens"}}', True)
    said(stats, b'{"id":4,"error":{"code":-32603,"message":"boom"}}', True)
    said(stats, b'{"id":5,"result":{}}', True)  # no stop reason: counted as an error
    said(stats, b'{"id":6,"result":{"stopReason":3}}', True)
    said(stats, b'{"id":7,"result":{"stopReason":"end_turn"},"error":"odd"}', True)
    said(stats, b'{"id":8,"result":null}', True)
    assert dict(stats.turns) == {"end_turn": 1, "cancelled": 1, "max_tokens": 1, "error": 5}
    assert dict(stats.errors) == {-32603: 1}


def test_other_messages_count_errors_and_updates_only() -> None:
    stats = ServerStats()
    said(stats, b'{"id":1,"error":{"code":-32601,"message":"no"}}', False)
    said(stats, b'{"id":2,"error":{"code":"x","message":"no"}}', False)
    said(stats, b'{"id":3,"result":{"stopReason":"end_turn","text":"\\"error\\""}}', False)
    said(stats, b'{"method":"session/update","params":{"sessionId":"s"}}', False)
    said(stats, b'{"method":"x","params":{"sessionId":"s"}}', False)
    said(stats, b'{"id":9,"method":"fs/read_text_file","params":{"sessionId":"s"}}', False)
    assert dict(stats.errors) == {-32601: 1}
    assert not stats.turns
    assert stats.updates_sent == 1
