"""OpenTelemetry spans for JSON-RPC requests, both directions (the `otel` extra).

Off until `enable_tracing()`; then every request a `Connection` sends gets a client span
whose W3C `traceparent` (and `tracestate`) travel in the request's `params._meta`, as the
ACP `_meta` propagation RFD says, and every request it answers gets a server span that
continues the trace found there (a `session/prompt` handler's span is the turn's). What a
handler sends meanwhile (the agent's permission requests, say) is a child of that span,
so the trace goes back to the client too. OTEL_* variables reach spawned agents with the
rest of the environment.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

# W3C trace context: version-traceid-spanid-flags, lowercase hex
TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")

_tracer: Any = None
_propagator: Any = None


def enable_tracing(tracer_provider: Any = None) -> None:
    """Trace every connection's requests from now on, with `tracer_provider` (default:
    OpenTelemetry's global one). Needs `opentelemetry-api` (`pip install ".[otel]"`)."""
    global _tracer, _propagator
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    _tracer = provider.get_tracer("acpstack")
    _propagator = TraceContextTextMapPropagator()


def disable_tracing() -> None:
    """Stop tracing (spans already started end as usual)."""
    global _tracer, _propagator
    _tracer = _propagator = None


def tracing() -> bool:
    return _tracer is not None


def start_client_span(method: str, params: Any) -> tuple[Any, Any]:
    """A client span for an outgoing request, and the params carrying its context."""
    from opentelemetry import trace

    span = _tracer.start_span(f"acp {method}", kind=trace.SpanKind.CLIENT)
    span.set_attribute("rpc.system", "jsonrpc")
    span.set_attribute("rpc.method", method)
    carrier: dict[str, str] = {}
    _propagator.inject(carrier, context=trace.set_span_in_context(span))
    return span, _with_meta(params, carrier)


def start_server_span(method: str, params: Any) -> tuple[Any, Any]:
    """A server span for an incoming request (a child of the trace in its `_meta`) and
    the token to detach it with (`end_server_span`)."""
    from opentelemetry import context, trace

    meta = _meta_of(params)
    parent = _propagator.extract(meta) if meta else None
    span = _tracer.start_span(f"acp {method}", context=parent, kind=trace.SpanKind.SERVER)
    span.set_attribute("rpc.system", "jsonrpc")
    span.set_attribute("rpc.method", method)
    token = context.attach(trace.set_span_in_context(span))
    return span, token


def end_server_span(span: Any, token: Any) -> None:
    from opentelemetry import context

    span.end()
    context.detach(token)


def _meta_of(params: Any) -> dict[str, str]:
    meta = params.get("_meta") if isinstance(params, dict) else getattr(params, "meta", None)
    if not isinstance(meta, dict):
        return {}
    return {
        k: v for k, v in meta.items() if k in ("traceparent", "tracestate") and isinstance(v, str)
    }


def _with_meta(params: Any, carrier: dict[str, str]) -> Any:
    """`params` with the trace context added to its `_meta` (a copy: the caller's object
    is left as it was)."""
    if isinstance(params, dict):
        meta = params.get("_meta")
        return {**params, "_meta": {**(meta if isinstance(meta, dict) else {}), **carrier}}
    if isinstance(params, msgspec.Struct) and hasattr(params, "meta"):
        meta = params.meta
        merged = {**(meta if isinstance(meta, dict) else {}), **carrier}
        return msgspec.structs.replace(params, meta=merged)
    return params  # no `_meta` to carry it (None params): the span stays local


def trace_ids(message: Any) -> dict[str, str] | None:
    """{"traceId", "spanId"} of the W3C `traceparent` a JSON-RPC message (decoded JSON)
    carries in its params' or result's `_meta`; None when it carries none (or a malformed
    one). Tracing need not be on: this is for tools that show traffic."""
    if not isinstance(message, dict):
        return None
    for part in ("params", "result"):
        body = message.get(part)
        meta = body.get("_meta") if isinstance(body, dict) else None
        value = meta.get("traceparent") if isinstance(meta, dict) else None
        found = TRACEPARENT.fullmatch(value) if isinstance(value, str) else None
        if found is not None:
            return {"traceId": found.group(1), "spanId": found.group(2)}
    return None
