"""asyncio runtime that drives the sans-IO protocol over a transport."""

from acpstack.rpc._connection import Connection, ConnectionClosed, Dispatcher, RequestTimeout

__all__ = ["Connection", "ConnectionClosed", "Dispatcher", "RequestTimeout"]
