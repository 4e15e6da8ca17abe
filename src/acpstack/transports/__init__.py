"""Byte pipes that carry ACP: this process's stdio, a subprocess, an in-memory pair."""

from acpstack.transports._base import DataCallback, EofCallback, Transport
from acpstack.transports._memory import MemoryTransport, memory_pair
from acpstack.transports._stdio import StdioError, StdioTransport, open_stdio_transport
from acpstack.transports._streams import StreamTransport
from acpstack.transports._subprocess import SubprocessTransport

__all__ = [
    "DataCallback",
    "EofCallback",
    "MemoryTransport",
    "StdioError",
    "StdioTransport",
    "StreamTransport",
    "SubprocessTransport",
    "Transport",
    "memory_pair",
    "open_stdio_transport",
]
