"""Record every -32603 (internal error) the target answers: the line that provoked it and
the traceback the target logged under the answer's correlation id, grouped by cause.

An internal error is not an invariant breach (the request was answered), but for input it
usually means a handler raised on data it should have refused with a proper error.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INTERNAL_ERROR = -32603
_CORRELATION = re.compile(r"correlation id ([0-9a-f]+)")
# A new log record ends a traceback: logging's default format ("ERROR:name:..."), and ours
# ("acpstack agent: ERROR name: ...", "acpstack: name: ...").
_RECORD_START = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):|^acpstack[ \w]*: ")
_KEEP_TRACEBACKS = 1000
_KEEP_LINE_BYTES = 2000


@dataclass
class InternalError:
    rid: Any
    correlation: str | None
    line: bytes | None  # what we sent with that id, when we can tell
    error: str  # the error object as answered
    traceback: list[str] = field(default_factory=list)

    def cause(self) -> str:
        """The innermost frame and the exception: what groups errors of one cause."""
        if not self.traceback:
            return f"(no traceback logged) {self.error}"
        frames = [t.strip() for t in self.traceback if t.lstrip().startswith('File "')]
        return (frames[-1] if frames else "") + " -> " + self.traceback[-1].strip()


class InternalErrorLog:
    def __init__(self) -> None:
        self.errors: list[InternalError] = []
        self._tracebacks: OrderedDict[str, list[str]] = OrderedDict()
        self._current: list[str] | None = None

    def note_stderr(self, text: str) -> None:
        """Feed every stderr line of the target, in order."""
        if _RECORD_START.match(text):
            self._current = None
            found = _CORRELATION.search(text)
            if found is not None:
                self._current = [text]
                self._tracebacks[found.group(1)] = self._current
                while len(self._tracebacks) > _KEEP_TRACEBACKS:
                    self._tracebacks.popitem(last=False)
        elif self._current is not None:
            self._current.append(text)

    def note_answer(self, message: dict[str, Any], line: bytes | None) -> None:
        data = message["error"].get("data")
        correlation = data.get("correlationId") if isinstance(data, dict) else None
        kept = line[:_KEEP_LINE_BYTES] if line is not None else None
        error = json.dumps(message["error"], ensure_ascii=False)[:_KEEP_LINE_BYTES]
        self.errors.append(InternalError(message["id"], correlation, kept, error))

    def resolve(self) -> None:
        """Attach the tracebacks (call after the target's stderr was read to its end)."""
        for error in self.errors:
            if error.correlation is not None:
                error.traceback = self._tracebacks.get(error.correlation, [])

    def groups(self) -> dict[str, list[InternalError]]:
        grouped: dict[str, list[InternalError]] = {}
        for error in self.errors:
            grouped.setdefault(error.cause(), []).append(error)
        return dict(sorted(grouped.items(), key=lambda item: -len(item[1])))

    def write(self, path: Path) -> None:
        """A readable report: per cause, its count, one traceback and every input line."""
        self.resolve()
        out: list[str] = [f"{len(self.errors)} internal errors (-32603)\n"]
        for number, (cause, errors) in enumerate(self.groups().items(), 1):
            out.append(f"\n=== cause {number}: {len(errors)} x {cause}\n")
            out.extend(f"  {t}\n" for t in errors[0].traceback)
            for error in errors:
                shown = error.line.decode("utf-8", "backslashreplace") if error.line else "?"
                out.append(f"  - id {json.dumps(error.rid)}: {shown}\n")
        path.write_text("".join(out))
