"""The live page of `acpstack inspect --web`: a small HTTP server on 127.0.0.1.

Standard library only (asyncio streams): the page needs three GET routes and one
server-sent-event stream, so `inspect --web` works in a plain install, without the
`remote` extra. Every URL starts with a random token; requests whose Host header is not
the loopback address (DNS rebinding) or whose path lacks the token get 404/403 and nothing
else; the bare address `/` answers a short page that explains the token (and has none).

    /TOKEN/              the page (with the events so far embedded, so it renders at once)
    /TOKEN/events        server-sent events: each new event as JSON (?after=SEQ to resume)
    /TOKEN/events.json   every event so far, as one JSON array
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
import logging
import secrets
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("acpstack.traffic")

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT = 10.0
KEEPALIVE = 15.0
QUEUE_LIMIT = 10_000
_END = object()


def _json_for_html(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


class LiveServer:
    """Serves the events of a TrafficAnalyzer as they come (call `publish` for each).

    `events` is the analyzer's list, shared (the page loads what is in it, then follows
    `publish`); `title` and `note` show on the page. Bound to 127.0.0.1 only; every URL
    carries a random token (see the module doc).
    """

    def __init__(self, events: list[dict[str, Any]], *, title: str, note: str = "") -> None:
        self.events = events
        self.title = title
        self.note = note
        self.token: str = secrets.token_urlsafe(18)
        """The secret first path segment of every URL."""
        self.port: int = 0
        """The port listened on (0 before `start`)."""
        self._server: asyncio.Server | None = None
        self._subscribers: set[asyncio.Queue[Any]] = set()
        self._ended = False
        self._template = (
            resources.files("acpstack.traffic").joinpath("_page.html").read_text("utf-8")
        )

    @property
    def url(self) -> str:
        """The page's address, token included (valid once `start` returned)."""
        return f"http://127.0.0.1:{self.port}/{self.token}/"

    async def start(self, port: int = 0) -> str:
        """Listen on 127.0.0.1:`port` (0: any free port) and return the page's `url`.
        Raises `OSError` when the port cannot be bound."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.url

    def publish(self, event: dict[str, Any]) -> None:
        """Push `event` (already in `events`) to every open page. Never blocks: a page
        that has 10,000 events waiting is dropped (it can reload)."""
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a page that stopped reading: drop it
                self._subscribers.discard(queue)

    def end(self) -> None:
        """The traffic is over: pages are told so."""
        self._ended = True
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(_END)

    async def close(self) -> None:
        """Tell pages the traffic ended and stop listening (waits up to 2 s for open
        connections)."""
        self.end()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            if len(head) > HEAD_LIMIT:
                raise ValueError("head too large")
            await self._route(head.decode("latin-1"), writer)
        except (ValueError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await self._send(writer, 400, "text/plain", b"bad request\n")
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _route(self, head: str, writer: asyncio.StreamWriter) -> None:
        request_line, *header_lines = head.split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("host") not in {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}:
            await self._send(writer, 403, "text/plain", b"forbidden\n")
            return
        parts = urlsplit(target)
        if method in ("GET", "HEAD") and parts.path == "/":
            # The bare address (typed by hand, or the port alone): say where the page is.
            await self._send(writer, 200, "text/html; charset=utf-8", _TOKEN_HELP)
            return
        prefix, _, rest = parts.path.lstrip("/").partition("/")
        if method not in ("GET", "HEAD") or not hmac.compare_digest(prefix, self.token):
            await self._send(writer, 404, "text/plain", b"not found\n")
            return
        if rest == "":
            if not parts.path.endswith("/"):
                await self._send(writer, 308, "text/plain", b"", {"Location": f"/{self.token}/"})
                return
            nonce = secrets.token_urlsafe(12)
            await self._send(writer, 200, "text/html; charset=utf-8", self._page(nonce), csp=nonce)
        elif rest == "events.json":
            body = json.dumps(self.events, ensure_ascii=False).encode()
            await self._send(writer, 200, "application/json", body)
        elif rest == "events":
            after = parse_qs(parts.query).get("after", [headers.get("last-event-id", "0")])[0]
            await self._stream(writer, int(after) if after.isdigit() else 0)
        else:
            await self._send(writer, 404, "text/plain", b"not found\n")

    def _page(self, nonce: str) -> bytes:
        page = self._template
        for marker, value in (
            ("__NONCE__", nonce),
            ("__AGENT__", html.escape(self.title)),
            ("__NOTE__", html.escape(self.note)),
            ("__INITIAL__", _json_for_html(self.events)),
        ):
            page = page.replace(marker, value)
        return page.encode()

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str,
        body: bytes,
        extra: dict[str, str] | None = None,
        *,
        csp: str | None = None,
    ) -> None:
        reason = {200: "OK", 308: "Permanent Redirect", 400: "Bad Request", 403: "Forbidden"}
        headers = {
            "Content-Type": content_type,
            "Content-Length": str(len(body)),
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Connection": "close",
            **(extra or {}),
        }
        if csp is not None:
            headers["Content-Security-Policy"] = (
                f"default-src 'none'; script-src 'nonce-{csp}'; style-src 'nonce-{csp}'; "
                "connect-src 'self'"
            )
        lines = [f"HTTP/1.1 {status} {reason.get(status, 'Not Found')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, after: int) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode())
        queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_LIMIT)
        self._subscribers.add(queue)
        try:
            for event in self.events[after:]:
                writer.write(_sse(event))
                after = event["seq"]
            if self._ended:
                queue.put_nowait(_END)
            await writer.drain()
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    writer.write(b": keep-alive\n\n")
                else:
                    if event is _END:
                        writer.write(b"event: end\ndata: {}\n\n")
                        await writer.drain()
                        return
                    if event["seq"] > after:
                        writer.write(_sse(event))
                        after = event["seq"]
                await writer.drain()
        finally:
            self._subscribers.discard(queue)


_TOKEN_HELP = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>acpstack inspect</title></head>
<body>
<h1>acpstack inspect</h1>
<p>The live page of this inspector is at an address with a secret token in it,
<code>http://127.0.0.1:PORT/TOKEN/</code>, so that other programs and web pages on this
machine cannot read the traffic.</p>
<p>The inspector printed that address when it started: on its standard error as
<code>acpstack inspect: live page: ...</code>, which <code>acpstack chat</code> shows in the
chat. Open that address; this one has no token and shows nothing else.</p>
</body></html>
"""


def _sse(event: dict[str, Any]) -> bytes:
    return f"id: {event['seq']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
