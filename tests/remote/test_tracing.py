"""OpenTelemetry: a trace started in a client is continued by the agent's spans (W3C
`traceparent` in `_meta`), over `AgentServer` on uvicorn (a real socket on 127.0.0.1);
spans checked with the SDK's in-memory exporter. Agent and client run in this process so
that one exporter sees both sides."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _serving import load_scripted, running
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from acpstack.client import ClientRuntime, connect_remote
from acpstack.rpc import disable_tracing, enable_tracing
from acpstack.schema import v1 as acp
from acpstack.server import AgentServer

pytestmark = [pytest.mark.timeout(60)]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()
        provider.shutdown()


@pytest.mark.asyncio
@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_agents_spans_continue_the_clients_trace(
    spans: InMemorySpanExporter, scheme: str
) -> None:
    async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        return request.options[0]

    app = AgentServer(load_scripted().ScriptedAgent)
    async with running(app) as url:
        runtime = ClientRuntime(ask=allow)
        async with connect_remote(url if scheme == "http" else "ws" + url[4:], runtime):
            await runtime.initialize()
            session = await runtime.new_session("/tmp")
            await runtime.prompt(session.session_id, "permission")
    finished = spans.get_finished_spans()
    by_name = {}
    for span in finished:
        by_name.setdefault((span.name, span.kind), []).append(span)
    (client_prompt,) = by_name[("acp session/prompt", SpanKind.CLIENT)]
    (agent_prompt,) = by_name[("acp session/prompt", SpanKind.SERVER)]
    # the turn on the agent's side is a child of the client's request, in the same trace
    assert agent_prompt.context.trace_id == client_prompt.context.trace_id
    assert agent_prompt.parent is not None
    assert agent_prompt.parent.span_id == client_prompt.context.span_id
    # and what the agent asks during the turn goes back to the client in that trace
    (asked,) = by_name[("acp session/request_permission", SpanKind.CLIENT)]
    (answered,) = by_name[("acp session/request_permission", SpanKind.SERVER)]
    assert asked.parent is not None and asked.parent.span_id == agent_prompt.context.span_id
    assert answered.parent is not None and answered.parent.span_id == asked.context.span_id
    assert answered.context.trace_id == client_prompt.context.trace_id
