"""`acpstack` with the OpenTelemetry SDK set up as an operator's launcher would (the way
`opentelemetry-instrument` does before the program starts): every span that ends is
written at once as one JSON line to the file named by $ACP_TEST_SPANS, so a test can
compare the server's spans with its client's."""

import json
import os
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLines(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                assert span.context is not None
                parent = span.parent
                line = {
                    "name": span.name,
                    "kind": span.kind.name,
                    "traceId": format(span.context.trace_id, "032x"),
                    "spanId": format(span.context.span_id, "016x"),
                    "parentSpanId": format(parent.span_id, "016x") if parent else None,
                }
                out.write(json.dumps(line) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["ACP_TEST_SPANS"])))
trace.set_tracer_provider(provider)

from acpstack.cli import main  # noqa: E402  (after the SDK, as a launcher would)

sys.exit(main())
