"""What the HTTP client transport notes about the messages its streams bring: it skips
decoding a notification (nothing to route), yet never mistakes a message with an `id` key
for one, however the key is spelled. No network: the messages are handed to it directly."""

from __future__ import annotations

from acpstack.transports._http_client import HttpClientTransport


async def test_a_response_whose_id_key_is_escaped_is_still_noted() -> None:
    transport = HttpClientTransport("http://127.0.0.1:9/acp")
    received: list[bytes] = []
    transport.start_reading(received.append, lambda: None)
    transport._session_requests.update({7: "s1", 8: "s2"})
    transport._receive(
        [
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}',
            b'{"jsonrpc":"2.0","\\u0069d":7,"result":{}}',
            b'{"jsonrpc":"2.0","id":8,"result":{}}',
        ],
        None,
    )
    assert transport._session_requests == {}  # both answers were seen as answers
    assert b"".join(received).count(b"\n") == 3  # and all three passed on
