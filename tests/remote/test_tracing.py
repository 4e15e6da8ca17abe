"""OpenTelemetry: a trace started in a client is continued by the agent's spans (W3C
`traceparent` in `_meta`), over `AgentServer` on uvicorn (a real socket on 127.0.0.1);
spans checked with the SDK's in-memory exporter. Agent and client run in this process so
that one exporter sees both sides; then through `acpstack serve --otel` as a subprocess,
whose spans a launcher script writes to a file (peers/traced_acpstack.py), and in the
records of `acpstack chat --json` against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _serving import PEERS, SCRIPTED, load_scripted, running, serve_process
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


TRACED = (str(PEERS / "traced_acpstack.py"),)
XDG = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")  # the chat's files: the test's


def spans_written(path: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The spans the traced `acpstack serve` wrote, by (name, kind)."""
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        span = json.loads(line)
        by_name.setdefault((span["name"], span["kind"]), []).append(span)
    return by_name


@pytest.mark.asyncio
async def test_acpstack_serve_otel_continues_the_clients_trace(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        return request.options[0]

    written = tmp_path / "spans.jsonl"
    env = {"ACP_TEST_SPANS": str(written)}
    with serve_process("--otel", "--agent", SCRIPTED, env=env, launcher=TRACED) as served:
        runtime = ClientRuntime(ask=allow)
        async with connect_remote(served.url, runtime):
            await runtime.initialize()
            session = await runtime.new_session("/tmp")
            await runtime.prompt(session.session_id, "permission")
        assert served.stop() == 0  # its spans are all written once it has exited
    ours = {(s.name, s.kind): s for s in spans.get_finished_spans()}
    theirs = spans_written(written)
    client_prompt = ours[("acp session/prompt", SpanKind.CLIENT)]
    (agent_prompt,) = theirs[("acp session/prompt", "SERVER")]
    assert agent_prompt["traceId"] == format(client_prompt.context.trace_id, "032x")
    assert agent_prompt["parentSpanId"] == format(client_prompt.context.span_id, "016x")
    # the agent's permission request, a child of its turn, is answered in the client's trace
    (asked,) = theirs[("acp session/request_permission", "CLIENT")]
    answered = ours[("acp session/request_permission", SpanKind.SERVER)]
    assert asked["parentSpanId"] == agent_prompt["spanId"]
    assert answered.parent is not None
    assert format(answered.parent.span_id, "016x") == asked["spanId"]
    assert answered.context.trace_id == client_prompt.context.trace_id


def traced_chat(url: str, tmp_path: Path, *options: str) -> list[dict[str, Any]]:
    """The records of `acpstack chat --json -p permission` against `url` (run with the
    SDK set up, its own spans going to a file of its own)."""
    env = {v: str(tmp_path / v) for v in XDG} | {"ACP_TEST_SPANS": str(tmp_path / "chat.jsonl")}
    done = subprocess.run(
        [sys.executable, *TRACED, "chat", "--url", url, "--cwd", str(tmp_path), *options]
        + ["-p", "permission", "--approve-all", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_chat_json_shows_the_trace_ids_the_agents_requests_carry(tmp_path: Path) -> None:
    written = tmp_path / "spans.jsonl"
    env = {"ACP_TEST_SPANS": str(written)}
    with serve_process("--otel", "--agent", SCRIPTED, env=env, launcher=TRACED) as served:
        records = traced_chat(served.url, tmp_path)
        assert served.stop() == 0
    traced = [r for r in records if "traceId" in r]
    # the chat does not trace (its own requests carry none); the agent's request does
    assert [(r["direction"], r["message"]["method"]) for r in traced] == [
        ("recv", "session/request_permission")
    ]
    (asked,) = spans_written(written)[("acp session/request_permission", "CLIENT")]
    assert (traced[0]["traceId"], traced[0]["spanId"]) == (asked["traceId"], asked["spanId"])


def test_chat_otel_starts_the_trace_the_agent_continues(tmp_path: Path) -> None:
    written = tmp_path / "spans.jsonl"
    env = {"ACP_TEST_SPANS": str(written)}
    with serve_process("--otel", "--agent", SCRIPTED, env=env, launcher=TRACED) as served:
        records = traced_chat(served.url, tmp_path, "--otel")
        assert served.stop() == 0
    traced = {(r["direction"], r["message"].get("method")): r for r in records if "traceId" in r}
    prompt = traced[("send", "session/prompt")]  # the chat's turn
    (agent_prompt,) = spans_written(written)[("acp session/prompt", "SERVER")]
    assert (agent_prompt["traceId"], agent_prompt["parentSpanId"]) == (
        prompt["traceId"],
        prompt["spanId"],
    )
    # the agent's request during the turn is in the chat's trace
    assert traced[("recv", "session/request_permission")]["traceId"] == prompt["traceId"]
