"""The in-process agent's pipe (`pipe_pair(at_once=True)`): a write reaches an idle reader
within the `write` call, and order holds when the reader is paused, holds bytes, or writes
back from inside its callback."""

from __future__ import annotations

import asyncio

from acpstack.server._pipe import pipe_pair


async def test_a_write_reaches_an_idle_reader_within_the_call() -> None:
    writer, reader = pipe_pair(at_once=True)
    got: list[bytes] = []
    reader.start_reading(got.append, lambda: None)
    await asyncio.sleep(0)  # start_reading's own release
    writer.write(b"a\n")
    assert got == [b"a\n"]  # no loop turn needed
    deferred_writer, deferred_reader = pipe_pair()
    later: list[bytes] = []
    deferred_reader.start_reading(later.append, lambda: None)
    deferred_writer.write(b"a\n")
    assert later == []  # the default pipe hands it over on the next turn


async def test_answers_written_from_inside_the_readers_callback_keep_their_order() -> None:
    agent_end, server_end = pipe_pair(at_once=True)
    server_got: list[bytes] = []
    agent_got: list[bytes] = []

    def agent_reads(data: bytes) -> None:
        agent_got.append(data)
        agent_end.write(b"answer " + data)  # crosses back at once

    def server_reads(data: bytes) -> None:
        server_got.append(data)
        if data == b"answer 1":
            server_end.write(b"2")  # nested: the agent is still taking "1"
            server_end.write(b"3")

    agent_end.start_reading(agent_reads, lambda: None)
    server_end.start_reading(server_reads, lambda: None)
    await asyncio.sleep(0)
    server_end.write(b"1")
    for _ in range(5):
        await asyncio.sleep(0)
    assert agent_got[0] == b"1" and b"".join(agent_got[1:]) == b"23"
    assert server_got[0] == b"answer 1" and b"".join(server_got[1:]) == b"answer 23"


async def test_a_paused_reader_gets_everything_in_order_when_it_resumes() -> None:
    writer, reader = pipe_pair(at_once=True)
    got: list[bytes] = []
    reader.start_reading(got.append, lambda: None)
    await asyncio.sleep(0)
    writer.write(b"1")
    reader.pause_reading()
    writer.write(b"2")
    writer.write(b"3")
    assert writer.write_buffer_size() == 2  # held: the writer sees it
    reader.resume_reading()
    writer.write(b"4")  # behind what is held, not before it
    await asyncio.sleep(0)
    assert b"".join(got) == b"1234" and got[0] == b"1"
    assert writer.write_buffer_size() == 0
