"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, scripted by the tests.

Each request takes the next script from the queue. A script is a list of steps:
("text", s), ("reasoning", s), ("tool", index, id, name, [argument fragments]),
("usage", prompt_tokens, completion_tokens), ("finish", reason), ("hang",) (stream
one chunk, then wait until the client goes away), ("status", code, body), ("raw",
content_type, body) (a 200 answer with that body), ("drop",) (close the connection at
once, without finishing the stream).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.scripts: list[list[tuple[Any, ...]]] = []
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.headers: list[dict[str, str]] = []  # every request's headers (names lower-cased)
        self.paths: list[str] = []  # request targets (path and query)
        self.disconnected = threading.Event()
        self._arrived = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def wait_requests(self, count: int, timeout: float = 10) -> bool:
        """Block until `count` requests have arrived (call through asyncio.to_thread)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await reader.readline()
            headers: dict[str, str] = {}
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if not request_line.startswith(b"POST") or b"/chat/completions" not in request_line:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                return
            self.requests.append(json.loads(body))
            self.auth_headers.append(headers.get("authorization"))
            self.headers.append(headers)
            self.paths.append(request_line.split()[1].decode())
            with self._arrived:
                self._arrived.notify_all()
            script = (
                self.scripts.pop(0)
                if self.scripts
                else [("text", "(no script)"), ("finish", "stop")]
            )
            await self._respond(script, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _respond(
        self,
        script: list[tuple[Any, ...]],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        if script and script[0][0] in ("status", "raw"):
            kind, first, text = script[0]
            code, content_type = (first, "application/json") if kind == "status" else (200, first)
            payload = text.encode()
            head = b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n" % (
                code,
                content_type.encode(),
                len(payload),
            )
            writer.write(head + payload)
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
        )

        def send(obj: dict[str, Any]) -> None:
            writer.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

        for step in script:
            kind = step[0]
            if kind == "text":
                send({"choices": [{"index": 0, "delta": {"content": step[1]}}]})
            elif kind == "reasoning":
                send({"choices": [{"index": 0, "delta": {"reasoning_content": step[1]}}]})
            elif kind == "tool":
                _, index, call_id, name, fragments = step
                for i, fragment in enumerate(fragments):
                    call: dict[str, Any] = {"index": index, "function": {"arguments": fragment}}
                    if i == 0:
                        call.update(id=call_id, type="function")
                        call["function"]["name"] = name
                    send({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
            elif kind == "usage":
                send(
                    {
                        "choices": [],
                        "usage": {
                            "prompt_tokens": step[1],
                            "completion_tokens": step[2],
                            "total_tokens": step[1] + step[2],
                        },
                    }
                )
            elif kind == "finish":
                send({"choices": [{"index": 0, "delta": {}, "finish_reason": step[1]}]})
            elif kind == "drop":
                await writer.drain()
                return
            elif kind == "hang":
                await writer.drain()
                await reader.read()  # returns when the client closes the connection
                self.disconnected.set()
                return
            await writer.drain()
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()


def agent_command(base_url: str, store: str, *extra: str) -> list[str]:
    """`acpstack agent` with the LLM brain on `base_url` (key in $FAKE_KEY, if set) and `store`."""
    return [
        sys.executable,
        "-m",
        "acpstack",
        "agent",
        "--model",
        "fake-model",
        "--base-url",
        base_url,
        "--api-key-env",
        "FAKE_KEY",
        "--store",
        store,
        *extra,
    ]
