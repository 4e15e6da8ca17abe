"""`acpstack serve --log-format json`: one JSON object per log line on stderr, for log
collectors (time, level, logger, message, exception; the trace and span ids when a span is
current)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import msgspec

try:  # the otel extra: trace ids in the lines when a span is current
    from opentelemetry import trace
except ImportError:
    trace = None  # type: ignore[assignment]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if trace is not None:
            context = trace.get_current_span().get_span_context()
            if context.is_valid:
                entry["trace_id"] = format(context.trace_id, "032x")
                entry["span_id"] = format(context.span_id, "016x")
        return msgspec.json.encode(entry).decode()
