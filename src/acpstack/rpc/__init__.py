"""asyncio runtime that drives the sans-IO protocol over a transport."""

from acpstack.rpc._connection import Connection
from acpstack.rpc._dispatcher import ConnectionClosed, Dispatcher, RequestTimeout
from acpstack.rpc._generated_requests import ParamsDoNotMatchMethod
from acpstack.rpc._run import event_loop_name, run
from acpstack.rpc._tracing import disable_tracing, enable_tracing

__all__ = [
    "Connection",
    "ConnectionClosed",
    "Dispatcher",
    "ParamsDoNotMatchMethod",
    "RequestTimeout",
    "disable_tracing",
    "enable_tracing",
    "event_loop_name",
    "run",
]
