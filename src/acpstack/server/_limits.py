"""The limits a remote ACP server enforces (per server and per connection)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerLimits:
    """Defaults suit one machine serving a few hundred editors; every limit is per server
    unless it says otherwise."""

    # live ACP connections; more get 503
    max_connections: int = 1024
    # one POST body or WebSocket message; more get 413 / close 1009
    max_message_size: int = 16 * 1024 * 1024
    # per connection: output waiting for its receivers before the agent is paused
    max_buffered_bytes: int = 8 * 1024 * 1024
    # per connection
    max_session_streams: int = 1024
    # characters of a string request id
    max_id_length: int = 1024
    # a connection with no receiver attached and no request for this long is closed: how
    # long a client that lost its connection has to come back and resume (the detach
    # timeout); its turns keep running meanwhile
    idle_timeout: float = 600.0
    # a session loaded anew while a connection its client left still runs a turn of it:
    # how long that turn gets to finish (so that the load replays it whole) before the
    # old connection is closed
    reattach_wait: float = 30.0
    # per stream: messages already sent, kept so that a client that lost its connection
    # gets them again when it resumes (`Last-Event-ID`); 0 keeps none
    replay_bytes: int = 1024 * 1024
    # output held back (paused agent) for this long closes the connection
    stall_timeout: float = 60.0
    # the agent's answer to initialize; then 504
    initialize_timeout: float = 30.0
    # an SSE comment this often on a quiet stream
    keepalive_interval: float = 15.0
    # JSON-RPC batches: 501 by default; True handles each element on its own
    accept_batches: bool = False
    # the request line and headers of one request; more get 431
    max_header_bytes: int = 32 * 1024
    # from a connection's first byte (or a kept-alive connection's next request) to the
    # end of the headers; then 408 and the connection is closed
    header_timeout: float = 10.0
    # from the end of the headers to the end of the body; then 408 and closed
    body_timeout: float = 30.0
    # TCP connections that have not yet passed the token check; more are answered 503
    # and closed, oldest first (they would otherwise hold file descriptors), once they
    # have waited `untrusted_grace` seconds, or at once past twice this many
    max_untrusted_connections: int = 256
    # a burst of new connections (a failover's resumes, each with its streams) arrives
    # before any has sent its request: none is refused for being new
    untrusted_grace: float = 1.0
    # a connection that never opened a session, with no receiver attached, is closed
    # after this long (abandoned `initialize`s would otherwise hold connection slots)
    sessionless_idle_timeout: float = 30.0
    # on SIGTERM: how long running turns get to finish before every connection closes
    drain_timeout: float = 30.0
    # `/readyz`'s check of the session store; no answer in time is "not ready"
    readiness_timeout: float = 2.0
