"""A turn that survives a broken connection: a server, a proxy that cuts every connection
through it once in the middle of a 300-chunk turn, and a client that resumes. Over
streamable HTTP and over WebSocket, every chunk arrives once and in order, and the
prompt gets its answer. Run it: `python examples/resume.py` (the `remote` extra)."""

import asyncio

import acpstack.events as events
from acpstack.agent import MemorySessionStore, SessionAgent, Turn
from acpstack.client import ClientRuntime, connect_remote
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer, bind_socket, serve_remote

CHUNKS = 300


class Counter(SessionAgent):
    def __init__(self) -> None:
        super().__init__(store=MemorySessionStore())

    async def prompt(self, turn: Turn) -> acp.StopReason:
        for n in range(CHUNKS):
            await turn.say(f"{n} ")
        return "end_turn"


class CuttingProxy:
    """Forwards 127.0.0.1 TCP connections; `cut_after(n)` aborts all of them (no goodbye,
    as a broken network or a restarted load balancer does) once n more bytes came back."""

    def __init__(self, target: int) -> None:
        self.target, self.left = target, -1
        self.links: set[asyncio.StreamWriter] = set()

    def cut_after(self, n: int) -> None:
        self.left = n

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self.links |= {writer, up_writer}
        up, down = self.pipe(reader, up_writer), self.pipe(up_reader, writer, down=True)
        await asyncio.gather(up, down, return_exceptions=True)
        self.links -= {writer, up_writer}

    async def pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, down: bool = False
    ) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                if down and self.left >= 0:
                    self.left -= len(data)
                    if self.left < 0:
                        for link in self.links:
                            link.transport.abort()
        finally:
            writer.transport.abort()


async def one_turn(scheme: str, port: int, proxy: CuttingProxy) -> None:
    chunks: list[str] = []

    def on_update(_session_id: str, update: object) -> None:
        if isinstance(update, events.AgentMessageChunk):
            chunks.append(getattr(update.content, "text", ""))

    runtime = ClientRuntime(on_update=on_update)
    async with connect_remote(f"{scheme}://127.0.0.1:{port}/acp", runtime) as conn:
        await runtime.initialize()
        session = await runtime.new_session("/tmp")
        proxy.cut_after(10_000)  # about a third of the turn
        answer = await runtime.prompt(session.session_id, "count")
        resumes = getattr(conn.transport, "resumes", 0)
    assert chunks == [f"{n} " for n in range(CHUNKS)], "lost, repeated or out of order"
    assert resumes > 0, "the connection was not cut"
    print(
        f"{scheme}: {answer.stop_reason}, {len(chunks)} chunks once each, in order; "
        f"{resumes} resume(s)"
    )


async def main() -> None:
    server_socket = bind_socket("127.0.0.1", 0)
    ready, stop = asyncio.Event(), asyncio.Event()
    app = AgentServer(Counter)
    server = asyncio.create_task(
        serve_remote(app, sock=server_socket, on_ready=lambda _s: ready.set(), stop=stop)
    )
    await ready.wait()
    proxy = CuttingProxy(server_socket.getsockname()[1])
    front = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    try:
        for scheme in ("http", "ws"):
            await one_turn(scheme, front.sockets[0].getsockname()[1], proxy)
    finally:
        front.close()
        stop.set()
        await server


asyncio.run(main())
