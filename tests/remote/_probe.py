"""A raw streamable-HTTP client for probing servers (httpx, one request at a time)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from _serving import sse_messages

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def prompt(rid: int, session: str, text: str) -> dict[str, Any]:
    return request(
        rid, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )


class EventStream:
    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_bytes()
        self._tail = b""
        self._pending: list[bytes] = []
        self.raw = b""

    async def next(self, count: int = 1, timeout: float = 10) -> list[dict[str, Any]]:
        async with asyncio.timeout(timeout):
            while len(self._pending) < count:
                chunk = await self._chunks.__anext__()
                self.raw += chunk
                self._tail += chunk
                if b"\n\n" in self._tail:
                    complete, self._tail = self._tail.rsplit(b"\n\n", 1)
                    self._pending += sse_messages(complete + b"\n\n")
        taken, self._pending = self._pending[:count], self._pending[count:]
        return [json.loads(m) for m in taken]

    async def until(self, predicate: Any, timeout: float = 10) -> list[dict[str, Any]]:
        """Messages up to and including the first one `predicate` accepts."""
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while True:
                (message,) = await self.next(1, timeout)
                seen.append(message)
                if predicate(message):
                    return seen


class Probe:
    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(10, read=None), headers=headers or {})
        self.connection_id = ""

    async def aclose(self) -> None:
        await self.http.aclose()

    async def initialize(self) -> dict[str, Any]:
        response = await self.http.post(self.url, json=INIT)
        assert response.status_code == 200, response.text
        self.connection_id = response.headers["acp-connection-id"]
        body: dict[str, Any] = response.json()
        return body

    async def post(
        self,
        message: Any,
        *,
        session: str | None = None,
        connection: str | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
        retry: bool = False,
    ) -> httpx.Response:
        headers = {"Content-Type": content_type}
        if retry:
            headers["Acp-Retry"] = "1"
        cid = self.connection_id if connection is None else connection
        if cid:
            headers["Acp-Connection-Id"] = cid
        if session:
            headers["Acp-Session-Id"] = session
        return await self.http.post(
            self.url,
            content=raw if raw is not None else json.dumps(message).encode(),
            headers=headers,
        )

    @contextlib.asynccontextmanager
    async def stream(
        self,
        session: str | None = None,
        *,
        expect: int = 200,
        accept: str = "text/event-stream",
        last_event_id: str | None = None,
    ) -> AsyncIterator[EventStream]:
        headers = {"Accept": accept, "Acp-Connection-Id": self.connection_id}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        if session:
            headers["Acp-Session-Id"] = session
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == expect, (response.status_code, await response.aread())
            yield EventStream(response)

    async def new_session(self, events: EventStream, rid: int = 1) -> str:
        assert (
            await self.post(request(rid, "session/new", {"cwd": "/tmp", "mcpServers": []}))
        ).status_code == 202
        (answer,) = await events.next()
        assert answer["id"] == rid, answer
        session: str = answer["result"]["sessionId"]
        return session
