"""Byte pipes that carry ACP: this process's stdio, a subprocess, an in-memory pair, remote
agents over streamable HTTP and WebSocket (these need the `remote` extra when used)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acpstack.transports._base import DataCallback, EofCallback, Transport
from acpstack.transports._plumbing import Inbox
from acpstack.transports._stdio import StdioError, StdioTransport, open_stdio_transport

if TYPE_CHECKING:
    from acpstack.transports._envelope import Envelope, peek_envelope, single_line
    from acpstack.transports._extras import MissingExtraError, require_extra
    from acpstack.transports._http_client import HttpClientTransport
    from acpstack.transports._memory import MemoryTransport, memory_pair
    from acpstack.transports._remote_base import (
        CONNECTION_HEADER,
        CONNECTION_LOST,
        LAST_EVENT_HEADER,
        ONE_STREAM_HEADER,
        RECEIVED_HEADER,
        RESUMABLE_HEADER,
        RETRY_HEADER,
        SESSION_HEADER,
        RemoteError,
    )
    from acpstack.transports._sse import SSE_KEEPALIVE
    from acpstack.transports._streams import StreamTransport
    from acpstack.transports._subprocess import StderrCallback, SubprocessTransport
    from acpstack.transports._ws_client import WebSocketClientTransport
    from acpstack.transports._ws_frames import RawFrame, WebSocketFrames

# What a stdio agent does not use loads on first use: the subprocess, in-memory and
# stream transports, the remote transports and their protocol pieces.
_LAZY = {
    "MemoryTransport": "_memory",
    "memory_pair": "_memory",
    "StreamTransport": "_streams",
    "StderrCallback": "_subprocess",
    "SubprocessTransport": "_subprocess",
    "HttpClientTransport": "_http_client",
    "WebSocketClientTransport": "_ws_client",
    "WebSocketFrames": "_ws_frames",
    "RawFrame": "_ws_frames",
    "Envelope": "_envelope",
    "peek_envelope": "_envelope",
    "single_line": "_envelope",
    "MissingExtraError": "_extras",
    "require_extra": "_extras",
    "CONNECTION_HEADER": "_remote_base",
    "CONNECTION_LOST": "_remote_base",
    "LAST_EVENT_HEADER": "_remote_base",
    "ONE_STREAM_HEADER": "_remote_base",
    "RECEIVED_HEADER": "_remote_base",
    "RESUMABLE_HEADER": "_remote_base",
    "RETRY_HEADER": "_remote_base",
    "SESSION_HEADER": "_remote_base",
    "RemoteError": "_remote_base",
    "SSE_KEEPALIVE": "_sse",
}

__all__ = [
    "CONNECTION_HEADER",
    "CONNECTION_LOST",
    "LAST_EVENT_HEADER",
    "ONE_STREAM_HEADER",
    "RECEIVED_HEADER",
    "RESUMABLE_HEADER",
    "RETRY_HEADER",
    "SESSION_HEADER",
    "SSE_KEEPALIVE",
    "DataCallback",
    "Envelope",
    "EofCallback",
    "HttpClientTransport",
    "Inbox",
    "MemoryTransport",
    "MissingExtraError",
    "RawFrame",
    "RemoteError",
    "StderrCallback",
    "StdioError",
    "StdioTransport",
    "StreamTransport",
    "SubprocessTransport",
    "Transport",
    "WebSocketClientTransport",
    "WebSocketFrames",
    "memory_pair",
    "open_stdio_transport",
    "peek_envelope",
    "require_extra",
    "single_line",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acpstack.transports' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"acpstack.transports.{module}"), name)
    globals()[name] = value
    return value
