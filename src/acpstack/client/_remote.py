"""Connect a Client to a remote agent (streamable HTTP or WebSocket), and reconnect to it.

Each gives the same `ClientConnection` as `spawn_agent`. Cookies live in a
`http.cookiejar.CookieJar` for the connection; pass your own `cookies` jar to keep them
(e.g. a load balancer's affinity cookie) across reconnects.

Reconnecting (ACP v1): a new connection, `initialize`, then `session/load` (when the agent
advertises `loadSession`) or `session/resume`. Messages that were in flight when the old
connection broke are lost: v1 has no replay; a turn that was running is not resumed.
`reconnect=True` (or a `Failover`) does all that by itself whenever the connection breaks,
under the same `ClientConnection` (see `acpstack.client._failover`); `reconnect()` below
does it once, by hand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from acpstack.client._client import AgentPeer, Client
from acpstack.client._connect import ClientConnection, connect_client
from acpstack.client._failover import FailoverTransport
from acpstack.client._failover_policy import Failover
from acpstack.client._runtime import ClientRuntime
from acpstack.schema import v1 as acp
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, CapabilityError

if TYPE_CHECKING:
    import ssl
    from http.cookiejar import CookieJar

    from acpstack.transports import Transport


@asynccontextmanager
async def connect_http(
    url: str,
    client: Client,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    cookies: CookieJar | None = None,
    verify: bool | str | ssl.SSLContext = True,
    timeout: float = 30.0,
    unstable: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    reconnect: bool | Failover = False,
    resume_timeout: float = 15.0,
    one_stream: bool = True,
) -> AsyncIterator[ClientConnection]:
    """Connect `client` to the agent at `url` (http:// or https://) over streamable HTTP.

    Nothing is sent until the first call (which must be `initialize`); closing DELETEs
    the connection. `token` is sent as `Authorization: Bearer`. A stream or POST that the
    network breaks is resumed for up to `resume_timeout` seconds when the server can
    (nothing is lost, nothing runs twice; see docs/remote.md). With `reconnect`, a
    connection that cannot be resumed is replaced and its sessions reattached (what was
    in flight fails as lost). `one_stream`: ask for every message on the connection's
    one event stream instead of a stream per session (`HttpClientTransport`).
    """
    from acpstack.transports import HttpClientTransport  # loads httptools: only when used

    jar = cookies if cookies is not None else _new_jar()

    async def open_transport() -> Transport:
        return HttpClientTransport(
            url,
            headers=headers,
            token=token,
            cookies=jar,
            verify=verify,
            timeout=timeout,
            max_message_size=max_message_size,
            resume_timeout=resume_timeout,
            one_stream=one_stream,
        )

    transport = await _with_failover(open_transport, reconnect, max_message_size)
    conn = connect_client(client, transport, unstable=unstable, max_message_size=max_message_size)
    async with conn.connection:
        yield conn


@asynccontextmanager
async def connect_websocket(
    url: str,
    client: Client,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    cookies: CookieJar | None = None,
    ssl_context: ssl.SSLContext | None = None,
    compression: bool = False,
    timeout: float = 30.0,
    unstable: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    reconnect: bool | Failover = False,
    resume_timeout: float = 15.0,
) -> AsyncIterator[ClientConnection]:
    """Connect `client` to the agent at `url` (ws:// or wss://) over one WebSocket.

    Raises `RemoteError` (with `.status`) when the server refuses the handshake. A socket
    that the network breaks is resumed for up to `resume_timeout` seconds when the server
    can (see docs/remote.md). With `reconnect`, a connection that cannot be resumed is
    replaced and its sessions reattached.
    """
    from acpstack.transports import WebSocketClientTransport  # loads websockets: only when used

    jar = cookies if cookies is not None else _new_jar()

    async def open_transport() -> Transport:
        socket = WebSocketClientTransport(
            url,
            headers=headers,
            token=token,
            cookies=jar,
            ssl_context=ssl_context,
            compression=compression,
            timeout=timeout,
            max_message_size=max_message_size,
            resume_timeout=resume_timeout,
        )
        await socket.connect()
        return socket

    transport = await _with_failover(open_transport, reconnect, max_message_size)
    conn = connect_client(client, transport, unstable=unstable, max_message_size=max_message_size)
    async with conn.connection:
        yield conn


def _new_jar() -> CookieJar:
    from http.cookiejar import CookieJar

    return CookieJar()  # one for the connection and every replacement of it


async def _with_failover(
    open_transport: Callable[[], Awaitable[Transport]],
    reconnect: bool | Failover,
    max_message_size: int,
) -> Transport:
    first = await open_transport()
    if reconnect is False:
        return first
    policy = reconnect if isinstance(reconnect, Failover) else Failover()
    return FailoverTransport(open_transport, first, policy, max_message_size=max_message_size)


@asynccontextmanager
async def connect_remote(
    url: str, client: Client, **options: Any
) -> AsyncIterator[ClientConnection]:
    """`connect_http` for http(s):// URLs, `connect_websocket` for ws(s):// ones.

    `verify` (HTTP) and `ssl_context` (WebSocket) may both be given as `ssl_context`;
    `one_stream` is HTTP's (a WebSocket always has one)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("ws", "wss"):
        options.pop("verify", None)
        options.pop("one_stream", None)
        async with connect_websocket(url, client, **options) as conn:
            yield conn
    elif scheme in ("http", "https"):
        context = options.pop("ssl_context", None)
        if context is not None:
            options.setdefault("verify", context)
        options.pop("compression", None)
        async with connect_http(url, client, **options) as conn:
            yield conn
    else:
        raise ValueError(
            f"a remote agent URL starts with http://, https://, ws:// or wss://, not {url!r}"
        )


async def reattach_session(
    client: Client,
    session_id: str,
    cwd: str,
    *,
    additional_directories: Sequence[str] = (),
    mcp_servers: Sequence[acp.McpServer] = (),
) -> str:
    """Attach an existing session to a fresh connection (after `initialize`): `session/load`
    when the agent can load sessions, else `session/resume`. Returns "load" or "resume"."""
    agent: AgentPeer = client.agent
    caps = agent.capabilities
    can_load = caps is not None and caps.load_session is True
    session_caps = caps.session_capabilities if caps is not None else None
    can_resume = isinstance(session_caps, acp.SessionCapabilities) and session_caps.resume not in (
        UNSET,
        None,
    )
    if not can_load and not can_resume:
        raise CapabilityError(
            "the agent can neither load nor resume sessions, so this one cannot be reattached"
        )
    how = "load" if can_load else "resume"
    if isinstance(client, ClientRuntime):
        if how == "load":
            await client.load_session(
                session_id,
                cwd,
                additional_directories=additional_directories,
                mcp_servers=mcp_servers,
            )
        else:
            await client.resume_session(
                session_id,
                cwd,
                additional_directories=additional_directories,
                mcp_servers=mcp_servers,
            )
        return how
    if how == "load":
        load = acp.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers))
        if additional_directories:
            load.additional_directories = list(additional_directories)
        await agent.session_load(load)
    else:
        resume = acp.ResumeSessionRequest(
            session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers)
        )
        if additional_directories:
            resume.additional_directories = list(additional_directories)
        await agent.session_resume(resume)
    return how


@asynccontextmanager
async def reconnect(
    url: str,
    client: Client,
    sessions: Mapping[str, str],
    *,
    initialize: acp.InitializeRequest | None = None,
    **options: Any,
) -> AsyncIterator[ClientConnection]:
    """A new connection to `url` with `sessions` (session id -> cwd) reattached.

    Sends `initialize` (a `ClientRuntime` builds its own request; other clients send
    `initialize` or the default one), then reattaches each session (see `reattach_session`).
    Pass the same `cookies` jar and `token` as before. In-flight messages of the old
    connection are lost (ACP v1 has no replay)."""
    async with connect_remote(url, client, **options) as conn:
        if isinstance(client, ClientRuntime) and initialize is None:
            await client.initialize()
        else:
            await conn.agent.initialize(initialize)
        for session_id, cwd in sessions.items():
            await reattach_session(client, session_id, cwd)
        yield conn
