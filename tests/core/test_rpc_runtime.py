"""The asyncio runtime over real pipes to real agent processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import Client, ConnectionClosed, RequestError, RequestTimeout, spawn_agent
from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import SubprocessTransport, memory_pair

PEERS = Path(__file__).parent / "peers"
AGENT = [sys.executable, str(PEERS / "core_agent.py")]
CAPS = acp.ClientCapabilities(
    fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=True)
)


class Recorder(Client):
    def __init__(self) -> None:
        self.texts: dict[str, list[str]] = {}
        self.ext_calls = 0
        self.notified: list[Any] = []
        self.notices: dict[str, int] = {}
        self._notice = asyncio.Condition()

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        if isinstance(update, acp.AgentMessageChunk) and isinstance(
            update.content, acp.TextContent
        ):
            if len(self.texts.get(params.session_id, ())) % 7 == 0:
                await asyncio.sleep(0)  # interleave with other work
            self.texts.setdefault(params.session_id, []).append(update.content.text)

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        return acp.ReadTextFileResponse(content=Path(params.path).read_text())

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        return acp.RequestPermissionResponse(
            outcome=acp.SelectedPermissionOutcome(option_id=params.options[0].option_id)
        )

    async def ext_method(self, method: str, params: Any) -> Any:
        self.ext_calls += 1
        return params

    async def ext_notification(self, method: str, params: Any) -> None:
        self.notified.append(params)
        async with self._notice:
            self.notices[method] = self.notices.get(method, 0) + 1
            self._notice.notify_all()

    async def notice(self, method: str, count: int = 1, timeout: float = 10) -> None:
        """Wait until the agent sent `method` (`_test/started`, `_test/cancelled`) `count` times."""
        async with asyncio.timeout(timeout), self._notice:
            await self._notice.wait_for(lambda: self.notices.get(method, 0) >= count)


async def open_session(conn: Any) -> str:
    await conn.agent.initialize(acp.InitializeRequest(protocol_version=1, client_capabilities=CAPS))
    return str(
        (await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
    )


def prompt(sid: str, text: str) -> acp.PromptRequest:
    return acp.PromptRequest(session_id=sid, prompt=[acp.TextContent(text=text)])


async def test_reverse_requests_while_a_prompt_is_pending(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("file-content")
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)
        result = await asyncio.wait_for(
            conn.agent.session_prompt(prompt(sid, f"ask {tmp_path / 'f.txt'}")), 20
        )
        assert result.stop_reason == "end_turn"
        assert client.texts[sid] == ["file-content|selected"]


class RecordingSubprocess(SubprocessTransport):
    """The real subprocess transport, noting for each write how many frames it carried
    and whether a task wrote it (a handler answering at once) or a loop callback did
    (frames coalesced until the end of an event-loop turn)."""

    writes: list[tuple[int, bool]]

    def write(self, data: bytes) -> None:
        self.writes.append((data.count(b"\n"), asyncio.current_task() is not None))
        super().write(data)


async def test_answers_are_written_at_once_and_a_burst_is_coalesced(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("file-content")
    transport = await RecordingSubprocess.spawn(AGENT)
    transport.writes = []
    client = Recorder()
    conn = connect_client(client, transport)
    async with conn.connection:
        sid = await open_session(conn)
        transport.writes.clear()
        await conn.agent.session_prompt(prompt(sid, f"ask {tmp_path / 'f.txt'}"))
        # The prompt, then the answers to the agent's two requests: each written by
        # the task that produced it, none kept waiting for the end of the turn.
        assert transport.writes == [(1, True), (1, True), (1, True)]
        assert client.texts[sid] == ["file-content|selected"]

        transport.writes.clear()
        answers = await asyncio.gather(
            *(conn.agent.call("_test/echo", {"i": i}) for i in range(50))
        )
        assert answers == [{"i": i} for i in range(50)]
        # 50 requests made in one turn: the first goes at once, the other 49 in one write.
        assert transport.writes == [(1, True), (49, False)]


async def test_updates_arrive_in_order_before_the_response() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)
        await conn.agent.session_prompt(prompt(sid, "stream 1000"))
        assert client.texts[sid] == [f"{i:08d}" for i in range(1000)]


async def test_ten_thousand_interleaved_requests_both_ways() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)

        async def ours(i: int) -> None:
            assert await conn.agent.call("_test/echo", {"i": i}) == {"i": i}

        async def theirs(i: int) -> None:  # the agent calls back into the client
            assert await conn.agent.call("_test/call_client", {"j": i}) == {"j": i}

        async def stream() -> None:
            await conn.agent.session_prompt(prompt(sid, "stream 2000"))

        jobs = [ours(i) for i in range(5000)] + [theirs(i) for i in range(5000)] + [stream()]
        await asyncio.wait_for(asyncio.gather(*jobs), 120)
        assert client.ext_calls == 5000
        assert client.texts[sid] == [f"{i:08d}" for i in range(2000)]


async def test_cancel_request_both_ways() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)
        task = asyncio.create_task(conn.agent.call("_test/slow", {}))
        await client.notice("_test/started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The agent's handler saw the cancellation ($/cancel_request reached it).
        await client.notice("_test/cancelled")
        await conn.agent.session_prompt(prompt(sid, "cancelled-count"))
        assert client.texts[sid][-1] == "1"
        # The raw answer of a peer-cancelled request is -32800; a handler may answer instead.
        state = conn.connection.state
        fut = asyncio.ensure_future(conn.connection.request("_test/catch_cancel", {}))
        await client.notice("_test/started", 2)
        rid = max(state.pending)
        conn.connection._send(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}\n' % rid
        )
        assert await asyncio.wait_for(fut, 10) == {"partial": True}
        fut = asyncio.ensure_future(conn.connection.request("_test/slow", {}))
        await client.notice("_test/started", 3)
        rid = max(state.pending)
        conn.connection._send(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}\n' % rid
        )
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(fut, 10)
        assert info.value.code == -32800
        # A cancel for an unknown id is ignored; the connection still works.
        conn.connection._send(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":424242}}\n'
        )
        assert await conn.agent.call("_test/echo", {"ok": 1}) == {"ok": 1}


async def test_timeout_on_a_peer_that_never_answers() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)
        with pytest.raises(RequestTimeout):
            await conn.agent.session_prompt(prompt(sid, "hang"), timeout=0.5)
        assert await conn.agent.call("_test/echo", [1, 2]) == [1, 2]
        await conn.agent.session_prompt(prompt(sid, "cancelled-count"))
        assert client.texts[sid][-1] == "1"  # the timed-out request was cancelled on the agent


async def test_peer_exits_mid_request() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        sid = await open_session(conn)
        pending = [asyncio.create_task(conn.agent.call("_test/slow", {})) for _ in range(3)]
        await client.notice("_test/started", 3)
        with pytest.raises(ConnectionClosed) as info:
            await asyncio.wait_for(conn.agent.session_prompt(prompt(sid, "exit 3")), 10)
        assert "exited with code 3" in str(info.value) and "fatal: the agent is going away" in str(
            info.value
        )
        for task in pending:
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(task, 5)
        with pytest.raises(ConnectionClosed):
            await conn.agent.call("_test/echo", {})


async def test_shutdown_ladder_kills_an_agent_that_ignores_eof_and_sigterm() -> None:
    transport = await SubprocessTransport.spawn(
        [sys.executable, str(PEERS / "stubborn_agent.py")], shutdown_timeout=0.3
    )
    received: asyncio.Queue[bytes] = asyncio.Queue()
    transport.start_reading(received.put_nowait, lambda: None)
    assert await asyncio.wait_for(received.get(), 10) == b"ready\n"
    pid = transport.pid
    await asyncio.wait_for(transport.close(), 10)
    assert transport.returncode == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_chatty_agent_never_blocks() -> None:
    lines: list[str] = []
    client = Recorder()
    async with spawn_agent(AGENT, client, stderr_callback=lines.append) as conn:
        sid = await open_session(conn)
        await asyncio.wait_for(
            conn.agent.session_prompt(prompt(sid, "stderr 100000")), 60
        )  # ~10 MB of stderr
        assert client.texts[sid] == ["done"]
    assert sum(1 for line in lines if line.startswith("log line")) == 100000


async def test_a_runaway_stderr_line_arrives_in_bounded_pieces() -> None:
    lines: list[str] = []
    all_there = asyncio.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        if sum(len(piece) for piece in lines if set(piece) == {"y"}) >= 200000:
            all_there.set()

    async with spawn_agent(AGENT, Recorder(), stderr_callback=on_line) as conn:
        sid = await open_session(conn)
        await asyncio.wait_for(conn.agent.session_prompt(prompt(sid, "longline 200000")), 30)
        await asyncio.wait_for(all_there.wait(), 10)  # stderr is a separate pipe
    pieces = [line for line in lines if line and set(line) == {"y"}]
    assert sum(map(len, pieces)) == 200000
    assert max(map(len, pieces)) <= 64 * 1024


async def test_bounded_inbound_concurrency() -> None:
    running = 0
    peak = 0
    release = asyncio.Event()
    all_read = asyncio.Event()

    class Slow(Agent):
        async def ext_method(self, method: str, params: Any) -> Any:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await release.wait()
            running -= 1
            return params

        async def ext_notification(self, method: str, params: Any) -> None:
            all_read.set()  # sent after the 50 calls: the agent has read every one of them

    a, b = memory_pair()
    agent_conn = connect_agent(Slow(), a, max_inbound_requests=4)
    client = connect_client(Client(), b)
    async with agent_conn, client.connection:
        await client.agent.initialize()
        calls = [asyncio.create_task(client.agent.call("_x", i)) for i in range(50)]
        await asyncio.sleep(0)  # one loop turn: each call task sends its request
        await client.agent.notify("_marker", {})
        await asyncio.wait_for(all_read.wait(), 10)
        assert peak == 4
        release.set()
        assert await asyncio.wait_for(asyncio.gather(*calls), 10) == list(range(50))
    assert peak == 4


async def test_per_session_order_across_sessions() -> None:
    client = Recorder()
    async with spawn_agent(AGENT, client) as conn:
        await conn.agent.initialize(
            acp.InitializeRequest(protocol_version=1, client_capabilities=CAPS)
        )
        # Two connections' worth of sessions in one agent: distinct ids come from two session/new calls.
        sid = (
            await conn.agent.session_new(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        ).session_id
        await asyncio.gather(
            conn.agent.session_prompt(prompt(sid, "stream 500")), conn.agent.call("_test/echo", {})
        )
        assert client.texts[sid] == [f"{i:08d}" for i in range(500)]
