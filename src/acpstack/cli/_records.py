"""Session records: what `acpstack chat` remembers of each session it drove, per directory.

A record (`sessions/<record id>.json` in the user's state directory) holds the agent's
session id, the directory, the agent (its name, or its command line), an optional name
(`chat -s NAME`) and times; its turns (`<record id>.jsonl`) hold each prompt, the agent's
final text and its tool calls, for `acpstack sessions history` and `export`. The agent
keeps the real session; a record only lets us find it and show what happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: Characters of a prompt or answer a history entry keeps.
MAX_ENTRY_CHARS = 64_000
#: Unnamed sessions a directory keeps: when a chat records one more, the least recently
#: used beyond these are forgotten (the agent keeps its own copy). Named ones are kept.
KEEP_UNNAMED = 30
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


def now() -> str:
    return time.strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, TIME_FORMAT)
    except ValueError:
        return None


@dataclass
class SessionRecord:
    id: str
    session_id: str
    cwd: str
    agent: str  # how the agent is shown: its name, or its command line (redacted)
    agent_name: str | None = None  # a profile or registry id: how to start it again
    agent_command: list[str] | None = None  # the command given after `--`
    url: str | None = None  # a remote agent
    name: str | None = None  # `chat -s NAME`
    title: str | None = None
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    turns: int = 0

    @property
    def lock_key(self) -> str:
        return f"session:{self.agent_key}:{self.session_id}"

    @property
    def agent_key(self) -> str:
        """Which agent the session id belongs to (ids are only unique per agent)."""
        if self.url:
            return f"url:{self.url}"
        if self.agent_name:
            return f"name:{self.agent_name}"
        return "command:" + json.dumps(self.agent_command or [])


class RecordError(Exception):
    pass


class AmbiguousRef(RecordError):
    """A prefix that fits more than one record."""

    def __init__(self, ref: str, records: list[SessionRecord]) -> None:
        self.ref = ref
        self.records = records
        shown = ", ".join(f"{r.id} ({r.name or r.session_id})" for r in records[:5])
        more = f" and {len(records) - 5} more" if len(records) > 5 else ""
        super().__init__(
            f"{ref!r} fits {len(records)} recorded sessions: {shown}{more}; "
            "give more characters of the id"
        )


class SessionRecords:
    """The records in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def all(self) -> list[SessionRecord]:
        records = []
        for path in sorted(self.folder.glob("*.json")):
            with contextlib.suppress(OSError, ValueError, TypeError):
                records.append(SessionRecord(**json.loads(path.read_text(encoding="utf-8"))))
        return sorted(records, key=_last_used, reverse=True)

    def named(self, cwd: str, name: str) -> SessionRecord | None:
        return next((r for r in self.all() if r.cwd == cwd and r.name == name), None)

    def for_session(self, agent_key: str, session_id: str) -> SessionRecord | None:
        return next(
            (r for r in self.all() if r.session_id == session_id and r.agent_key == agent_key),
            None,
        )

    def find(self, ref: str, cwd: str) -> SessionRecord | None:
        """A record by its name in `cwd`, its record id or the agent's session id, or by a
        unique prefix of either id (of any directory). An exact match wins over a prefix;
        a prefix that fits several records raises `AmbiguousRef`."""
        records = self.all()
        by_name = [r for r in records if r.name == ref and r.cwd == cwd]
        by_id = [r for r in records if ref in (r.id, r.session_id)]
        for found in (by_name, by_id):
            if found:
                return found[0]
        if not ref:
            return None
        fitting = [r for r in records if r.id.startswith(ref) or r.session_id.startswith(ref)]
        if len(fitting) > 1:
            raise AmbiguousRef(ref, fitting)
        return fitting[0] if fitting else None

    def unnamed_beyond(self, cwd: str, keep: int) -> list[SessionRecord]:
        """The unnamed records of `cwd` after its `keep` most recently used ones."""
        return [r for r in self.all() if r.cwd == cwd and r.name is None][keep:]

    def new_id(self) -> str:
        return secrets.token_hex(6)

    def save(self, record: SessionRecord) -> None:
        record.updated_at = now()
        data = json.dumps(asdict(record), ensure_ascii=False, indent=1).encode()
        _write_atomic(self.folder / f"{record.id}.json", data)

    def add_turn(self, record: SessionRecord, entries: Iterable[dict[str, Any]]) -> None:
        lines = []
        for entry in entries:
            entry = dict(entry, at=now())
            if isinstance(entry.get("text"), str) and len(entry["text"]) > MAX_ENTRY_CHARS:
                entry["text"] = entry["text"][:MAX_ENTRY_CHARS] + "\n[...]"
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
        fd = os.open(
            self.folder / f"{record.id}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write("".join(lines))
        record.turns += 1
        self.save(record)

    def history(self, record: SessionRecord) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        with contextlib.suppress(FileNotFoundError):
            with (self.folder / f"{record.id}.jsonl").open(encoding="utf-8") as lines:
                for line in lines:
                    with contextlib.suppress(ValueError):
                        entry = json.loads(line)
                        if isinstance(entry, dict):
                            entries.append(entry)
        return entries

    def delete(self, record: SessionRecord) -> None:
        for suffix in (".jsonl", ".json"):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / f"{record.id}{suffix}").unlink()


def _last_used(record: SessionRecord) -> datetime:
    return parse_time(record.updated_at) or datetime.min.replace(tzinfo=UTC)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
