"""Recordings: one JSON object per line (NDJSON), in the order the proxy saw the bytes.

    {"acpstack": "traffic", "version": 1, "started": 1767225600.0}     first line
    {"ts": 1767225600.01, "from": "client", "message": {...}}         a JSON-RPC message
    {"ts": ..., "from": "agent", "raw": "text", "problem": "..."}     a line that is not JSON
    {"ts": ..., "from": "agent", "stderr": "a log line"}              the agent's stderr

`ts` is Unix time in seconds. A recording can be replayed (`acpstack replay`): the client
side is sent again, the agent side is what the answers are compared with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

Side = Literal["client", "agent"]
FORMAT = "traffic"
VERSION = 1
#: Characters of a non-JSON line kept in a record.
RAW_LIMIT = 64 * 1024


class RecordingError(ValueError):
    """A file that is not an acpstack traffic recording."""


@dataclass
class Record:
    """One line of a recording: a message, a line that is not JSON, or a stderr line."""

    ts: float
    """When the proxy saw it (Unix time, seconds)."""
    side: Side
    """Who wrote it: "client" or "agent"."""
    message: Any = None
    """The frame's JSON value (a message record)."""
    raw: str | None = None
    """A frame that is not JSON: its first 64 KiB, as text."""
    problem: str = ""
    """Why `raw` is not a message."""
    stderr: str | None = None
    """A line the agent wrote to stderr."""

    @property
    def is_message(self) -> bool:
        """Whether the record holds a JSON value (not a raw line or a stderr line)."""
        return self.raw is None and self.stderr is None

    def to_json(self) -> dict[str, Any]:
        """The record's line of a recording (see the module doc), as a JSON object."""
        data: dict[str, Any] = {"ts": round(self.ts, 6), "from": self.side}
        if self.stderr is not None:
            data["stderr"] = self.stderr
        elif self.raw is not None:
            data["raw"] = self.raw
            data["problem"] = self.problem
        else:
            data["message"] = self.message
        return data

    @classmethod
    def from_json(cls, data: Any) -> Record:
        """The record of one recording line's JSON value. Raises `RecordingError` when it
        is not an object with a known `from` and a numeric `ts`."""
        if not isinstance(data, dict) or data.get("from") not in ("client", "agent"):
            raise RecordingError(f"not a traffic record: {str(data)[:120]}")
        ts = data.get("ts")
        if not isinstance(ts, int | float):
            raise RecordingError(f"a record without a time: {str(data)[:120]}")
        return cls(
            float(ts),
            data["from"],
            data.get("message"),
            data.get("raw"),
            str(data.get("problem", "")),
            data.get("stderr"),
        )


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def frame_record(
    side: Side, frame: bytes, problem: str = "", *, now: float | None = None
) -> Record:
    """The record of one frame as it crossed the proxy (at `now`, by default this moment)."""
    now = time.time() if now is None else now
    if not problem:
        try:
            return Record(now, side, json.loads(frame))
        except (ValueError, RecursionError) as exc:
            problem = f"not JSON: {exc}"
    text = frame[:RAW_LIMIT].decode("utf-8", "replace")
    return Record(now, side, raw=text, problem=problem)


class RecordingWriter:
    """Appends records to a file as they happen (flushed per record: a crash loses nothing).

    Creating it truncates `path` and writes the header line; `close` when done.
    """

    def __init__(self, path: Path) -> None:
        self._file: IO[str] = path.open("w", encoding="utf-8")
        header = {"acpstack": FORMAT, "version": VERSION, "started": round(time.time(), 6)}
        self._write(header)

    def add(self, record: Record) -> None:
        """Append one record (a line) and flush it."""
        self._write(record.to_json())

    def _write(self, data: dict[str, Any]) -> None:
        self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def read_recording(path: Path) -> list[Record]:
    """The records of a recording. A truncated last line (a recorder that was killed) is
    ignored; anything else malformed raises `RecordingError`."""
    lines = path.read_text("utf-8").split("\n")
    return parse_lines(lines)


def parse_lines(lines: Iterable[str]) -> list[Record]:
    records: list[Record] = []
    lines = [line for line in lines if line.strip()]
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except ValueError:
            if number == len(lines):
                break  # the recorder stopped mid-line
            raise RecordingError(f"line {number} is not JSON") from None
        if number == 1:
            if not isinstance(data, dict) or data.get("acpstack") != FORMAT:
                raise RecordingError("not an acpstack traffic recording (no header line)")
            continue
        records.append(Record.from_json(data))
    if not lines:
        raise RecordingError("the recording is empty")
    return records
