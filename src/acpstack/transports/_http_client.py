"""The client side of remote ACP over streamable HTTP (POST + server-sent events).

- The first message must be `initialize`: POSTed alone, answered 200 with the JSON reply
  and the `Acp-Connection-Id` header. Then the connection's SSE stream is opened.
- A session's SSE stream is opened before the first message that names the session is
  POSTed (and as soon as a reply carries a new `sessionId`); the streams of the sessions
  that the next queued messages name are opened with it, side by side (a failover
  resumes every session at once). A server that does not know
  the session yet (404) gets the POST without `Acp-Session-Id`; the stream is tried again
  once a reply about that session arrived.
- Every POST of a session's message carries `Acp-Session-Id`, and so does every reply to
  a request that arrived on a session's stream.
- Cookies are kept for the connection (or in the caller's jar, across reconnects).
- 401, 403, 404 and 410 end the connection, and so do 502, 503 and 504 (a proxy in front
  of several servers lost the one that holds the connection); another HTTP error fails
  only its request.
- A stream that breaks (a network error, not an end the server chose) ends the connection,
  unless the server can resume (`Acp-Resumable: 1` on its answer to initialize): then the
  stream is opened again with `Last-Event-ID` (the id of the last event received) and the
  server sends what was missed, and a POST that failed on the network is sent again with
  `Acp-Retry: 1` (the server drops one that had arrived), for up to `resume_timeout`
  seconds. Only when that fails (the server answers 404 or 410: it no longer has the
  connection) does the connection end.
- `close()` DELETEs the connection.

HTTP/1.1 comes from `_http1` (httptools under an asyncio protocol): a general-purpose
client cost ~0.8 ms per POST here, most of a round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
from collections.abc import Mapping
from http.cookiejar import CookieJar
from typing import Any

import msgspec

from acpstack.transports._cookies import cookie_header, store_cookies
from acpstack.transports._envelope import Envelope, RequestId, peek_envelope, single_line
from acpstack.transports._extras import require_extra
from acpstack.transports._http1 import Http1Connection, Response, endpoint, request_head
from acpstack.transports._remote_base import (
    CONNECTION_HEADER,
    CONNECTION_LOST,
    JSON_TYPE,
    LAST_EVENT_HEADER,
    ONE_STREAM_HEADER,
    RESUMABLE_HEADER,
    RETRY_HEADER,
    SESSION_HEADER,
    SSE_TYPE,
    MessageTransport,
    log,
)
from acpstack.transports._sse import SseDecoder, SseError
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, HANDSHAKE_METHODS, INTERNAL_ERROR

# 502, 503 and 504 come from a proxy that could not reach the server holding the
# connection (it died or hangs): the connection is as good as gone.
FATAL_STATUSES = frozenset({401, 403, 404, 410, 502, 503, 504})
REATTACH_METHODS = frozenset({"session/load", "session/resume"})
ERROR_BODY_LIMIT = 8 * 1024
LOOK_AHEAD = 64  # queued messages whose sessions' streams are opened ahead of their POST
MAX_POST_CONNECTIONS = 4  # keep-alive connections for POSTs (more open only while busy)
OPEN, UNKNOWN, CONFLICT, BROKEN = "open", "unknown", "conflict", "broken"
REFUSED = "the server refused the TCP connection"  # nobody listens: nothing to resume


class HttpClientTransport(MessageTransport):
    """A Transport to a remote ACP agent at `url` (http:// or https://).

    Nothing is sent until the runtime writes its first message, which must be
    `initialize` (the module doc has the rules of the exchange). A failed POST of a request
    fails that request with an error answer made locally; 401, 403, 404 and 410, and a
    server that cannot be reached, end the connection (`close_reason` says why).

    Args:
        url: The agent's endpoint.
        headers: Extra headers sent with every request.
        token: Sent as `Authorization: Bearer <token>` (never logged).
        cookies: The cookie jar; pass your own to keep cookies across reconnects.
        verify: TLS verification for https: True (the system's CAs), False (none), the
            path of a CA bundle, or an `ssl.SSLContext`.
        timeout: Seconds for connecting and for each HTTP exchange (a POST's answer,
            opening a stream); a server that takes longer ends the connection.
        max_message_size: The largest message accepted from the server, in bytes.
        resume_timeout: How long to keep trying to resume a broken stream or to send a
            POST again (when the server can resume); 0 never tries.
        one_stream: Ask the server for every message on the connection's one event
            stream instead of one stream per session (an acpstack extension,
            `Acp-One-Stream`; a server that does not know it opens a stream per session
            as usual). Fewer TCP connections: a failover of many sessions opens one.

    Raises:
        ValueError: `url` is not an http:// or https:// URL, or a header in `headers`
            could split a request (a name that is not a token, a value with CR, LF or NUL).
        MissingExtraError: The `remote` extra (httptools) is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        cookies: CookieJar | None = None,
        verify: bool | str | ssl.SSLContext = True,
        timeout: float = 30.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        resume_timeout: float = 15.0,
        one_stream: bool = False,
    ) -> None:
        super().__init__(max_message_size)
        require_extra("httptools")
        self.resume_timeout = resume_timeout
        self.resumable: bool = False
        """Whether the server said it can resume this connection (`Acp-Resumable: 1`)."""
        self.resumes: int = 0
        self._ask_one_stream = one_stream
        self.one_stream: bool = False
        """Whether the server sends every message on the connection's one stream (it said
        `Acp-One-Stream: 1`): no stream per session is opened then."""
        """How many times a stream broke and was resumed, or a POST was sent again."""
        self.url = url
        """The agent's endpoint, as given."""
        self._endpoint = endpoint(url, verify)
        self._headers = [(k, v) for k, v in (headers or {}).items()]
        if token is not None:
            self._headers.append(("Authorization", f"Bearer {token}"))
        request_head("GET", self._endpoint, self._headers, None)  # ValueError: not sendable
        self.cookies: CookieJar = cookies if cookies is not None else CookieJar()
        """The cookie jar in use."""
        self._timeout = timeout
        self._idle_posts: list[Http1Connection] = []  # keep-alive connections not in use
        self._all_posts: list[Http1Connection] = []
        self._post_slots = asyncio.Semaphore(MAX_POST_CONNECTIONS)
        # (a reply that breaks HTTP is an HttpError, a ConnectionError)
        self._errors: tuple[type[Exception], ...] = (OSError, TimeoutError)
        self._stream_errors: tuple[type[Exception], ...] = (*self._errors, SseError)
        self.connection_id: str | None = None
        """The server's `Acp-Connection-Id` once `initialize` was answered; None before, and after
        `close`."""
        self._streams: dict[str, asyncio.Future[str]] = {}  # session id -> how its stream opened
        self._reading_streams: set[Http1Connection] = set()  # streams delivering events now
        self._unknown: set[str] = set()  # sessions the server did not know when we asked
        self._failed: set[str] = set()  # sessions refused with 409 until load/resume
        self._reply_sessions: dict[RequestId, str] = {}  # agent request id -> stream it came on
        self._session_requests: dict[RequestId, str] = {}  # our pending request id -> its session
        # A broken stream finding out whether the server can resume the connection: when
        # a server dies every stream of the connection breaks at once, and one question is
        # enough (the others wait for its answer instead of asking the survivors again).
        self._resume_probe: asyncio.Future[None] | None = None
        # The server answered 404 or 410 for the connection itself: it no longer has it, and
        # `close` sends no DELETE (at a failover that is a request less on each survivor).
        self._forgotten = False

    def _start_receiving(self) -> None:
        pass  # the streams open after initialize

    def pause_reading(self) -> None:
        """Stop taking messages off the server's streams until `resume_reading` (their
        sockets are not read: TCP pushes back on the server); POST answers still come."""
        super().pause_reading()
        for stream in self._reading_streams:
            stream.hold(True)

    def resume_reading(self) -> None:
        """Take messages off the streams again after `pause_reading`."""
        super().resume_reading()
        for stream in self._reading_streams:
            stream.hold(False)

    # -- sending ---------------------------------------------------------------------------

    async def _send_one(self, message: bytes) -> None:
        try:
            env = peek_envelope(message)
        except msgspec.DecodeError:
            log.warning("dropped an outgoing message that is not JSON")
            return
        try:
            if self.connection_id is None:
                await self._initialize(message, env)
            else:
                await self._post_until_sent(message, env)
        except self._errors as exc:
            self._finish(f"could not reach {self.url}: {exc!r}")

    async def _post_until_sent(self, message: bytes, env: Envelope) -> None:
        """POST the message; when the network fails under it and the server can resume,
        again (marked as a retry) until it is answered or `resume_timeout` passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.resume_timeout
        delay, retry = 0.05, False
        while True:
            try:
                await self._post(message, env, retry=retry)
                return
            except self._errors as exc:
                if (
                    not self.resumable
                    or isinstance(exc, ConnectionRefusedError)
                    or loop.time() + delay > deadline
                ):
                    raise
                log.info("a POST failed (%r); sending it again", exc)
            await asyncio.sleep(delay)
            delay, retry = min(delay * 2, 1.0), True
            self.resumes += 1

    async def _initialize(self, message: bytes, env: Envelope) -> None:
        if env.kind != "request" or env.method not in HANDSHAKE_METHODS:
            self._fail_request(
                env,
                "the first message on a remote connection must be `initialize` "
                "(or a conductor's `proxy/initialize`)",
            )
            return
        headers = [("Content-Type", JSON_TYPE)]
        if self._ask_one_stream:
            headers.append((ONE_STREAM_HEADER, "1"))
        response = await self._request("POST", headers, message)
        if response.status != 200:
            self._finish(f"initialize failed: {_describe(response)}")
            return
        connection_id = response.header(CONNECTION_HEADER)
        if not connection_id:
            self._finish(f"the server's answer to initialize has no {CONNECTION_HEADER} header")
            return
        if _is_error(response.body):
            # No version was agreed: the server's connection is let go, and the client's next
            # `initialize` (say for the version the agent listed) opens a new one.
            with contextlib.suppress(*self._errors):
                await self._request("DELETE", [(CONNECTION_HEADER, connection_id)])
            self._deliver([single_line(response.body)])
            return
        self.connection_id = connection_id
        self.resumable = response.header(RESUMABLE_HEADER) == "1"
        self.one_stream = self._ask_one_stream and response.header(ONE_STREAM_HEADER) == "1"
        self._spawn(self._read_stream(None, None))
        self._deliver([single_line(response.body)])

    async def _post(self, message: bytes, env: Envelope, *, retry: bool = False) -> None:
        session = env.session_id
        if env.kind == "response":
            session = self._reply_sessions.pop(env.id, None)
        headers = [("Content-Type", JSON_TYPE), (CONNECTION_HEADER, self.connection_id or "")]
        if session is not None and not self.one_stream:
            if env.method in REATTACH_METHODS:
                self._failed.discard(session)
            if env.method == "session/resume" and env.kind == "request":
                # Its answer comes on the connection's stream while the session's is not
                # open yet (nothing of the session comes before it, unlike a load's
                # history): the session's stream opens beside the POST, not before it.
                state = self._session_stream_now(session)
            else:
                state = await self._session_stream(session)
            if state == CONFLICT:
                self._fail_request(
                    env,
                    f"the server refused session {session}'s stream (409); load or resume it again",
                )
                return
            if state == BROKEN:
                self._fail_request(
                    env, f"session {session}'s stream could not be opened; not sent", lost=True
                )
                return
            if state == OPEN:
                headers.append((SESSION_HEADER, session))
            if env.kind == "request":
                self._session_requests[env.id] = session
        if retry:
            headers.append((RETRY_HEADER, "1"))
        response = await self._request("POST", headers, message)
        if 200 <= response.status < 300:
            return
        self._session_requests.pop(env.id, None)
        if response.status in FATAL_STATUSES:
            self._forgotten = response.status in (404, 410)
            self._finish(f"{env.method or 'a reply'} was refused: {_describe(response)}")
        elif response.status == 409 and session is not None:
            self._fail_session(session, "the server answered 409 (conflict)")
            self._fail_request(env, f"{env.method} was refused: {_describe(response)}")
        elif env.kind == "request":
            self._fail_request(env, f"{env.method} was refused: {_describe(response)}", response)
        else:
            log.warning("the server refused a %s: %s", env.kind, _describe(response))

    def _fail_request(
        self, env: Envelope, text: str, response: Response | None = None, *, lost: bool = False
    ) -> None:
        """Answer one of our own requests locally with an error (nothing else is affected).
        `lost`: the connection broke under it (`data.reason` says "connection_lost")."""
        if env.kind != "request":
            log.warning("%s", text)
            return
        error: dict[str, Any] = {"code": INTERNAL_ERROR, "message": text}
        if lost:
            error["data"] = {"reason": CONNECTION_LOST, "method": env.method}
        elif response is not None:
            error["data"] = {
                "status": response.status,
                "body": response.body[:ERROR_BODY_LIMIT].decode("utf-8", "replace"),
            }
        self._deliver([msgspec.json.encode({"jsonrpc": "2.0", "id": env.id, "error": error})])

    def _with_common(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        headers = [*headers, *self._headers]
        if self.cookies:
            cookie = cookie_header(self.cookies, self.url)
            if cookie:
                headers.append(("Cookie", cookie))
        return headers

    def _keep_cookies(self, response: Response) -> None:
        set_cookies = response.header_list("set-cookie")
        if set_cookies:
            store_cookies(self.cookies, self.url, set_cookies)

    def _lane_of(self, message: bytes) -> object:
        """A message goes in order with the others about its session (a reply: the session
        of the request it answers); messages about different sessions go side by side."""
        try:
            env = peek_envelope(message)
        except msgspec.DecodeError:
            return None
        if env.kind == "response":
            return self._reply_sessions.get(env.id)
        return env.session_id

    async def _request(
        self, method: str, headers: list[tuple[str, str]], body: bytes = b""
    ) -> Response:
        async with self._post_slots:
            posts = self._idle_posts.pop() if self._idle_posts else self._new_post_connection()
            try:
                async with asyncio.timeout(self._timeout):
                    response = await posts.send(
                        method, self._with_common(headers), body, resent=[(RETRY_HEADER, "1")]
                    )
            finally:
                self._idle_posts.append(posts)
        self._keep_cookies(response)
        return response

    def _new_post_connection(self) -> Http1Connection:
        posts = Http1Connection(
            self._endpoint,
            connect_timeout=self._timeout,
            max_event_size=self._max_message_size + 64 * 1024,
        )
        self._all_posts.append(posts)
        return posts

    # -- streams ---------------------------------------------------------------------------

    async def _session_stream(self, session: str) -> str:
        """The session stream's state once it opened (opening it if needed)."""
        opened = self._stream_opening(session)
        return opened if isinstance(opened, str) else await asyncio.shield(opened)

    def _session_stream_now(self, session: str) -> str:
        """The session stream's state now, opening it if needed (without waiting)."""
        opened = self._stream_opening(session)
        if isinstance(opened, str):
            return opened
        return opened.result() if opened.done() else UNKNOWN

    def _stream_opening(self, session: str) -> str | asyncio.Future[str]:
        """A state the session's stream cannot open in, or its opening (started now if
        it was not)."""
        if session in self._failed:
            return CONFLICT
        if session in self._unknown:
            return UNKNOWN
        opened = self._streams.get(session)
        if opened is None:
            opened = self._open_session_stream(session)
            self._open_streams_ahead()
        return opened

    def _open_streams_ahead(self) -> None:
        """Open the streams of the sessions that the next queued messages name, so that
        they open side by side, not one per POST (a failover's many session/resume)."""
        if self.one_stream:
            return
        for message in itertools.islice(self._outbox, LOOK_AHEAD):
            try:
                session = peek_envelope(message).session_id
            except msgspec.DecodeError:
                continue
            if isinstance(session, str) and not (
                session in self._streams or session in self._unknown or session in self._failed
            ):
                self._open_session_stream(session)

    def _open_session_stream(self, session: str) -> asyncio.Future[str]:
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._streams[session] = opened
        self._spawn(self._read_stream(session, opened))
        return opened

    async def _read_stream(self, session: str | None, opened: asyncio.Future[str] | None) -> None:
        """Read one stream (the connection's, or a session's) until it ends; a stream that
        breaks is opened again where it was while the server can resume it."""
        decoder = SseDecoder(self._max_message_size)
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        delay, resuming, probing = 0.05, False, None
        try:
            while True:
                outcome = await self._read_stream_once(session, opened, decoder, resuming)
                if outcome is None:
                    return  # refused: handled
                ended, broken, was_open = outcome
                if was_open:  # it worked since the last break: a new break gets the full time
                    opened, deadline, delay = None, None, 0.05
                if deadline is None:
                    deadline = loop.time() + self.resume_timeout
                if (
                    not broken
                    or not self.resumable
                    or self._finished
                    or self._closing
                    or ended.startswith(REFUSED)
                    or loop.time() + delay > deadline
                ):
                    break
                log.info("%s; resuming it", ended)
                probe = self._resume_probe
                if probe is not None and not probe.done() and probe is not probing:
                    await probe  # another stream asks the server; a refusal ends the connection
                    if self._finished or self._closing:
                        break
                else:
                    if probing is None or probing.done():
                        probing = self._resume_probe = loop.create_future()
                    await asyncio.sleep(delay)
                delay, resuming = min(delay * 2, 1.0), True
                self.resumes += 1
            _settle(opened, BROKEN)  # it never opened
            self._stream_ended(session, ended, broken)
        finally:
            _settle(probing, None)

    async def _read_stream_once(
        self,
        session: str | None,
        opened: asyncio.Future[str] | None,
        decoder: SseDecoder,
        resuming: bool,
    ) -> tuple[str, bool, bool] | None:
        """One GET of the stream: how it ended, whether it broke, and whether it had
        opened; None when the server refused it."""
        headers = [("Accept", SSE_TYPE), (CONNECTION_HEADER, self.connection_id or "")]
        if session is not None:
            headers.append((SESSION_HEADER, session))
        if resuming:
            headers.append((LAST_EVENT_HEADER, decoder.position() or "0"))
        ended, broken, was_open = "the server ended the stream", False, False
        stream = Http1Connection(
            self._endpoint,
            connect_timeout=self._timeout,
            max_event_size=self._max_message_size + 64 * 1024,
        )
        try:
            async with asyncio.timeout(self._timeout):
                response = await stream.open_stream("GET", self._with_common(headers))
            self._keep_cookies(response)
            if response.status != 200:
                response.body = b"".join([chunk async for chunk in stream.body()])
                if resuming:
                    self._forgotten = response.status in (404, 410)
                    self._finish(f"the stream could not be resumed: {_describe(response)}")
                    _settle(self._resume_probe, None)
                else:
                    self._stream_refused(session, response)
                return None
            _settle(opened, OPEN)
            if resuming:  # the server still has the connection: the other streams go on
                _settle(self._resume_probe, None)
            was_open = True
            decoder.reset()

            def take(chunk: bytes) -> None:
                lines = decoder.feed_lines(chunk)
                if lines is None:  # not only one-line data events
                    messages = decoder.feed(chunk)
                    if messages:
                        self._receive(messages, session)
                elif b'"id"' in lines or b"\\u" in lines:  # (see `_receive`)
                    self._receive(lines[:-1].split(b"\n"), session)
                else:  # notifications only: as they are
                    self._deliver_lines(lines)

            # The events are handled as each read is parsed; pausing (`pause_reading`)
            # stops reading the stream's socket.
            self._reading_streams.add(stream)
            stream.hold(not self._reading.is_set())
            try:
                await stream.pump(take)
            finally:
                self._reading_streams.discard(stream)
        except ConnectionRefusedError as exc:
            ended, broken = f"{REFUSED}: {exc!r}", True
        except self._stream_errors as exc:
            ended, broken = f"the stream failed: {exc!r}", True
        finally:
            await stream.aclose()
        return ended, broken, was_open

    def _stream_refused(self, session: str | None, response: Response) -> None:
        status = response.status
        if session is None or (status in FATAL_STATUSES and status != 404):
            self._finish(
                f"the server refused the {'connection' if session is None else 'session'} stream: {_describe(response)}"
            )
            return
        opened = self._streams.pop(session, None)
        if status == 404:  # not known to the server yet (e.g. before session/load)
            self._unknown.add(session)
            _settle(opened, UNKNOWN)
        else:
            self._failed.add(session)
            _settle(opened, CONFLICT)

    def _stream_ended(self, session: str | None, why: str, broken: bool) -> None:
        if self._finished or self._closing:
            return
        if session is None or broken:
            # A stream that breaks (not one the server ended) means the server or the way
            # to it is gone: the whole connection ends, so that a caller can reconnect.
            what = "connection" if session is None else f"session {session}'s"
            self._finish(f"the {what} stream ended: {why}")
            return
        opened = self._streams.get(session)
        if opened is None or session in self._failed:
            return
        del self._streams[session]  # the next message about the session opens it again
        if opened.done() and opened.result() == OPEN:
            self._fail_session_requests(
                session, f"session {session}'s stream ended: {why}", lost=True
            )

    def _receive(self, messages: list[bytes], session: str | None) -> None:
        for index, message in enumerate(messages):
            if b'"id"' not in message and b"\\u" not in message and b"\n" not in message:
                # No `id` key: a notification (or not JSON-RPC), which the transport routes
                # nowhere and the runtime decodes anyway. Inside a JSON string a quote is
                # escaped, and without `\u` escapes a key `id` can only be spelled `"id"`.
                continue
            try:
                env = peek_envelope(message)
            except msgspec.DecodeError:
                continue  # the runtime answers it as a parse error
            if b"\n" in message:
                messages[index] = single_line(message)
            if env.kind == "request":
                # its answer goes in order with the messages of its session (on one
                # stream, the session its params name)
                about = session
                if about is None and self.one_stream:
                    about = env.session_id
                if isinstance(about, str):
                    self._reply_sessions[env.id] = about
            elif env.kind == "response":
                asked_about = self._session_requests.pop(env.id, None)
                if asked_about is not None:
                    self._unknown.discard(asked_about)
                new = env.result_session_id
                if self.one_stream:
                    continue
                if new is not None and new not in self._streams and new not in self._failed:
                    self._unknown.discard(new)
                    self._open_session_stream(new)
        self._deliver(messages)

    def _fail_session(self, session: str, why: str) -> None:
        self._failed.add(session)
        self._fail_session_requests(session, why)

    def _fail_session_requests(self, session: str, why: str, *, lost: bool = False) -> None:
        failed = [rid for rid, s in self._session_requests.items() if s == session]
        for rid in failed:
            del self._session_requests[rid]
            self._fail_request(Envelope("request", rid), why, lost=lost)

    async def _shutdown(self) -> None:
        connection_id, self.connection_id = self.connection_id, None
        await self._stop_tasks()  # the senders first: the DELETE goes on a POSTs' connection
        try:
            if connection_id is not None and not self._forgotten:
                with contextlib.suppress(*self._errors):
                    async with asyncio.timeout(5):
                        posts = (
                            self._idle_posts[-1]
                            if self._idle_posts
                            else self._new_post_connection()
                        )
                        await posts.send(
                            "DELETE", self._with_common([(CONNECTION_HEADER, connection_id)])
                        )
        finally:
            for posts in self._all_posts:
                await posts.aclose()


def _settle(opened: asyncio.Future[Any] | None, state: object) -> None:
    if opened is not None and not opened.done():
        opened.set_result(state)


def _is_error(body: bytes) -> bool:
    """Whether `body` is a JSON-RPC error response."""
    try:
        message = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    return isinstance(message, dict) and "error" in message


def _describe(response: Response) -> str:
    text = response.body[:500].decode("utf-8", "replace").strip()
    return f"HTTP {response.status} {response.reason}" + (f": {text}" if text else "")
