"""asyncio runtime that drives the sans-IO protocol over a transport."""

from acpstack.rpc._connection import Connection
from acpstack.rpc._dispatcher import (
    ConnectionClosed,
    Dispatcher,
    HandlerDispatcher,
    Handlers,
    RequestTimeout,
)
from acpstack.rpc._generated_requests import ParamsDoNotMatchMethod
from acpstack.rpc._run import event_loop_name, run
from acpstack.rpc._tracing import disable_tracing, enable_tracing, trace_ids
from acpstack.rpc._writer import Writer

__all__ = [
    "Connection",
    "ConnectionClosed",
    "Dispatcher",
    "HandlerDispatcher",
    "Handlers",
    "ParamsDoNotMatchMethod",
    "RequestTimeout",
    "Writer",
    "disable_tracing",
    "enable_tracing",
    "event_loop_name",
    "run",
    "trace_ids",
]
