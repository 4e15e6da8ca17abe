"""`acpstack chat --url`: the transport to a remote agent (streamable HTTP or WebSocket).

The transport fails over: when the connection breaks (the server died, or the load
balancer in front of several servers lost it), the chat connects again through the same
URL and resumes its session there. A turn that was running is reported lost (the chat
shows the error), and a line on stderr says what happened.
"""

from __future__ import annotations

import sys
from typing import Any

from acpstack.client import Failover, FailoverEvent, FailoverTransport
from acpstack.transports import MissingExtraError, RemoteError, Transport


def _tell(event: FailoverEvent) -> None:
    if event.kind == "reattached":
        return  # one line per session would bury the one that says all are back
    sys.stderr.write(f"acpstack: {event}\n")
    sys.stderr.flush()


async def remote_transport(url: str, token: str | None) -> Transport:
    """A connected transport to `url`: http(s):// uses streamable HTTP, ws(s):// a WebSocket.

    Raises RemoteError (server unreachable or refusing) or ValueError (not such a URL)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https"):
        from acpstack.transports import HttpClientTransport

        async def open_transport() -> Transport:
            return HttpClientTransport(url, token=token)

    elif scheme in ("ws", "wss"):
        from acpstack.transports import WebSocketClientTransport

        async def open_transport() -> Transport:
            transport = WebSocketClientTransport(url, token=token)
            await transport.connect()
            return transport

    else:
        raise ValueError(f"--url takes http(s):// or ws(s):// URLs, not {url!r}")
    first = await open_transport()
    return FailoverTransport(open_transport, first, Failover(on_event=_tell))


REMOTE_ERRORS: tuple[type[Exception], ...] = (RemoteError, MissingExtraError, ValueError)


def describe(exc: Any) -> str:
    return f"error: could not connect to the remote agent: {exc}"
