"""`/metrics`: a Prometheus scrape, parsed with the official parser, moves as sessions run
(an `AgentServer` on uvicorn, a real socket on 127.0.0.1); `acpstack serve`'s JSON logs."""

from __future__ import annotations

import json

import httpx
import pytest
from _probe import INIT, Probe, prompt, request
from _serving import SCRIPTED, load_scripted, running, serve_process
from prometheus_client.parser import text_string_to_metric_families

from acpstack.server import AgentServer, ServerSecurity

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

TOKEN = "metrics-test-token"


async def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(
            url.rsplit("/", 1)[0] + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


async def test_a_scrape_moves_as_sessions_run() -> None:
    app = AgentServer(load_scripted().ScriptedAgent, security=ServerSecurity(token=TOKEN))
    async with running(app) as url:
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(url.rsplit("/", 1)[0] + "/metrics")).status_code == 401
        before = await scrape(url)
        assert before[("acp_connections", ())] == 0
        assert before.get(("acp_turns_total", (("outcome", "end_turn"),)), 0) == 0
        assert before[("acp_sessions_opened_total", ())] == 0
        probe = Probe(url, {"Authorization": f"Bearer {TOKEN}"})
        try:
            await probe.initialize()
            async with probe.stream() as events:
                sid = await probe.new_session(events)
            async with probe.stream(sid) as events:
                assert (await probe.post(prompt(2, sid, "hello"))).status_code == 202
                await events.until(lambda m: m.get("id") == 2)
                during = await scrape(url)
                assert (await probe.post(request(3, "no/such_method", {}))).status_code == 202
            async with probe.stream() as events:
                await events.until(lambda m: m.get("id") == 3)
            after = await scrape(url)
        finally:
            await probe.aclose()
    assert during[("acp_connections", ())] == 1
    assert during[("acp_sessions", ())] == 1
    assert during[("acp_connections_opened_total", ())] == 1
    assert during[("acp_sessions_opened_total", ())] == 1
    assert during[("acp_turns_total", (("outcome", "end_turn"),))] == 1
    assert during[("acp_updates_sent_total", ())] >= 1
    assert during[("acp_turns_running", ())] == 0
    assert after[("acp_errors_total", (("code", "-32601"),))] == 1
    assert ("acp_store_batch_seconds_count", ()) in after  # a hook, fed by the store later


async def test_json_logs_are_one_object_per_line() -> None:
    with serve_process("--agent", SCRIPTED, "--log-format", "json", "-v") as served:
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.post(served.url, json=INIT)).status_code == 200
        served.wait_line("agent started")
    entries = [json.loads(line) for line in served.stderr if line.startswith("{")]
    started = [e for e in entries if "agent started" in e["message"]]
    assert started and started[0]["logger"] == "acpstack.server"
    assert started[0]["level"] == "info" and started[0]["time"].endswith("+00:00")


async def test_the_reference_agents_store_feeds_the_batch_metrics(tmp_path: object) -> None:
    # `acpstack serve` connects its store's writer to /metrics: after a turn, the batches
    # that stored it are counted, and nothing waits.
    from acpstack.client import ClientRuntime, connect_remote

    store = f"{tmp_path}/s.sqlite3"
    with serve_process(
        "--store", store, "--token-env", "METRICS_TOKEN", env={"METRICS_TOKEN": TOKEN}
    ) as served:
        runtime = ClientRuntime()
        async with connect_remote(
            served.url, runtime, headers={"Authorization": f"Bearer {TOKEN}"}
        ):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "hello")
        after = await scrape(served.url)
    assert after[("acp_store_batch_seconds_count", ())] >= 1
    assert after[("acp_store_batch_seconds_sum", ())] > 0
    assert after[("acp_store_queue_depth", ())] == 0
