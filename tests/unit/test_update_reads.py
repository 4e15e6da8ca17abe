"""What a remote connection does with a read from its agent: a read of session updates
only goes onto a one-stream connection's stream at once (`RemoteConnection._updates_read`,
`_updates_only`); anything else, frame by frame (`_route`). Either way the stream holds
every frame, in order, as the agent wrote it, and the metrics count the updates only."""

from __future__ import annotations

import pytest

from acpstack.server import ServerLimits
from acpstack.server._connection import RemoteConnection

pytestmark = pytest.mark.asyncio


def update(n: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d"}}}}' % n
    )


# A request the agent makes under the method's name, with a plain and an escaped `id` key:
# spelled like an update up to its id, routed as a request (not an update for the metrics).
ASKING = update(90)[:-1] + b',"id":7}'
ESCAPED = update(91)[:-1] + b',"\\u0069d":8}'


def connection(multiplex: bool = True) -> RemoteConnection:
    return RemoteConnection("c1", ServerLimits(), multiplex=multiplex, on_closed=lambda _c: None)


def taken(conn: RemoteConnection) -> list[bytes]:
    return conn.connection_stream.take()[1]


async def test_a_read_of_updates_goes_on_the_stream_at_once() -> None:
    conn = connection()
    batches: list[int] = []
    push = conn._push_updates
    conn._push_updates = lambda text, frames: batches.append(len(frames)) or push(text, frames)  # type: ignore[method-assign]
    conn._on_data(b"".join(update(i) + b"\n" for i in range(3)))
    assert taken(conn) == [update(i) for i in range(3)]
    assert batches == [3] and conn.stats.updates_sent == 3 and conn.opened_session
    # A read that ends inside a line: the next one finishes it (the frames' own path).
    whole = b"".join(update(i) + b"\n" for i in range(3, 7))
    conn._on_data(whole[:50])
    conn._on_data(whole[50:])
    assert taken(conn) == [update(i) for i in range(3, 7)]
    assert batches == [3, 4] and conn.stats.updates_sent == 7


@pytest.mark.parametrize("odd", [ASKING, ESCAPED], ids=["id", "escaped id"])
async def test_a_request_among_updates_is_routed_on_its_own(odd: bytes) -> None:
    conn = connection()
    conn._on_data(update(1) + b"\n" + odd + b"\n" + update(2) + b"\n")
    assert taken(conn) == [update(1), odd, update(2)]
    assert conn.stats.updates_sent == 2  # the request is not an update


async def test_lines_ending_in_cr_and_per_session_streams_take_the_whole_way() -> None:
    conn = connection()
    conn._on_data(update(1) + b"\r\n" + update(2) + b"\r\n")
    assert taken(conn) == [update(1), update(2)]  # the CRs gone, as the line splitter does
    per_session = connection(multiplex=False)
    per_session._on_data(update(1) + b"\n" + update(2) + b"\n")
    assert per_session.sessions["s1"].take()[1] == [update(1), update(2)]
    assert taken(per_session) == [] and per_session.stats.updates_sent == 2
