"""What an operator can see of a running server: counts kept as plain numbers while it
runs (no dependency, a few additions per message), turned into Prometheus metrics only
when `/metrics` is scraped (`prometheus_client`, the `metrics` extra).

The session store's batch latency and queue depth are fed by the store's writer
(`acpstack.agent.observe_store_batches`: `acpstack serve` connects its reference agent's
store); with an agent of your own, connect it the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from acpstack.server._guard import GuardCounters
from acpstack.transports import Envelope

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class ServerStats:
    """Counts since the server started (gauges are read from the server at scrape time)."""

    connections_opened: int = 0
    sessions_opened: int = 0
    updates_sent: int = 0
    turns: Counter[str] = field(default_factory=Counter)  # by outcome: stopReason or "error"
    errors: Counter[int] = field(default_factory=Counter)  # JSON-RPC error answers, by code
    store_batches: int = 0
    store_batch_seconds: float = 0.0
    store_queue_depth: int = 0

    def observe_store_batch(self, seconds: float) -> None:
        """Hook for the store's writer: one batch committed in `seconds`."""
        self.store_batches += 1
        self.store_batch_seconds += seconds

    def agent_said(self, env: Envelope, turn: bool) -> None:
        """Count one message from an agent, from what routing it found out (`turn`: the
        answer to a `session/prompt`): no second decode of the message."""
        if env.kind == "notification":
            if env.method == "session/update":
                self.updates_sent += 1
            return
        if env.kind != "response":
            return
        error = env.error
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            self.errors[error["code"]] += 1
        if turn:
            reason = env.stop_reason
            self.turns[reason if reason is not None and error is None else "error"] += 1


def render(
    stats: ServerStats, guard: GuardCounters, gauges: Callable[[], dict[str, float]]
) -> bytes:
    """The Prometheus text exposition of everything above (needs `prometheus_client`)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        SummaryMetricFamily,
    )

    class Snapshot:
        def collect(self) -> Iterator[Any]:
            for name, value in gauges().items():
                yield GaugeMetricFamily(f"acp_{name}", _HELP[name], value=value)
            yield CounterMetricFamily(
                "acp_connections_opened", "ACP connections opened", value=stats.connections_opened
            )
            yield CounterMetricFamily(
                "acp_sessions_opened",
                "sessions created, loaded or resumed",
                value=stats.sessions_opened,
            )
            yield CounterMetricFamily(
                "acp_updates_sent", "session/update notifications sent", value=stats.updates_sent
            )
            turns = CounterMetricFamily("acp_turns", "turns ended, by outcome", labels=["outcome"])
            for outcome, count in sorted(stats.turns.items()):
                turns.add_metric([outcome], count)
            yield turns
            errors = CounterMetricFamily(
                "acp_errors", "JSON-RPC error answers from agents, by code", labels=["code"]
            )
            for code, count in sorted(stats.errors.items()):
                errors.add_metric([str(code)], count)
            yield errors
            refused = CounterMetricFamily(
                "acp_http_refused",
                "TCP connections refused before a request was read, by reason",
                labels=["reason"],
            )
            refused.add_metric(["header_too_large"], guard.header_too_large)
            refused.add_metric(["header_timeout"], guard.header_timeouts)
            refused.add_metric(["evicted"], guard.evicted)
            yield refused
            yield SummaryMetricFamily(
                "acp_store_batch_seconds",
                "session store batches committed, and the time they took",
                count_value=stats.store_batches,
                sum_value=stats.store_batch_seconds,
            )
            yield GaugeMetricFamily(
                "acp_store_queue_depth",
                "session store writes waiting for a batch",
                value=stats.store_queue_depth,
            )

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Snapshot())
    return bytes(generate_latest(registry))


_HELP = {
    "connections": "ACP connections open",
    "sessions": "sessions open on this server's connections",
    "turns_running": "turns (session/prompt requests) not answered yet",
    "untrusted_tcp_connections": "TCP connections that have not yet sent a request head",
    "draining": "1 while the server drains (after SIGTERM)",
}
