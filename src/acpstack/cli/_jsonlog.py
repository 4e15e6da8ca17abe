"""`acpstack serve --log-format json`: one JSON object per log line on stderr, for log
collectors (time, level, logger, message, exception; the trace and span ids when a span is
current and tracing is on)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import msgspec

from acpstack.rpc._tracing import tracing


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
        if tracing():
            from opentelemetry import trace

            context = trace.get_current_span().get_span_context()
            if context.is_valid:
                entry["trace_id"] = format(context.trace_id, "032x")
                entry["span_id"] = format(context.span_id, "016x")
        return msgspec.json.encode(entry).decode()
