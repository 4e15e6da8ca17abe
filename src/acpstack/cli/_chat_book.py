"""The chat's bookkeeping of its session: the record (`acpstack sessions`) and the lock
that keeps a second chat from writing to the same session."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import msgspec

from acpstack.cli._lock import SessionLock, is_locked
from acpstack.cli._records import KEEP_UNNAMED, SessionRecord, SessionRecords
from acpstack.client import SessionState


class SessionBook:
    """`records` and `locks` are None when the state directory cannot be used: nothing is
    recorded and nothing locked (the chat says so when it starts)."""

    def __init__(
        self,
        records: SessionRecords | None,
        locks: Path | None,
        template: SessionRecord,
    ) -> None:
        self.records = records
        self.locks = locks
        self.template = template  # cwd, agent, name: what every record of this chat shares
        self.record: SessionRecord | None = None
        self.history_file: Path | None = None  # the prompt's input history
        self._locks: dict[str, SessionLock] = {}
        if records is not None and template.name is not None:
            self.record = records.named(template.cwd, template.name)

    @property
    def known_session_id(self) -> str | None:
        """The session a named record points to (to load instead of starting one)."""
        return self.record.session_id if self.record is not None else None

    def lock_name(self) -> None:
        """Before the agent starts: the name (`-s NAME`) in this directory is ours."""
        name, cwd = self.template.name, self.template.cwd
        if name is not None:
            key = hashlib.sha256(f"{cwd}\0{name}".encode()).hexdigest()
            self._lock(f"name:{key}", f"the session {name!r} of {cwd}")

    def lock_session(self, session_id: str) -> None:
        self._lock(self._new(session_id).lock_key, f"session {session_id}")

    def _lock(self, key: str, what: str) -> None:
        if self.locks is None or key in self._locks:
            return
        lock = SessionLock(self.locks, key, what)
        lock.acquire()
        self._locks[key] = lock

    def _new(self, session_id: str, name: str | None = None) -> SessionRecord:
        return dataclasses.replace(self.template, session_id=session_id, name=name)

    def opened(self, session_id: str, *, switched: bool = False) -> None:
        """The session is open: lock it (if not yet) and record it. `switched`: the user
        moved to another session (`/load`, `/new`), which gets its own record."""
        previous = self.record
        self.lock_session(session_id)
        if previous is not None and switched:
            self._unlock(previous)
        if self.records is None:
            return
        record = None if switched else self.record
        if record is None:
            fresh = self._new(session_id, None if switched else self.template.name)
            record = self.records.for_session(fresh.agent_key, session_id) or fresh
            if not record.id:
                record.id = self.records.new_id()
        record.session_id = session_id  # a named session the agent lost: the name moves on
        self.record = record
        self.records.save(record)
        if record.name is None:
            self._trim_unnamed(record.cwd)

    def _trim_unnamed(self, cwd: str) -> None:
        """Unnamed sessions (each `-p` run makes one) do not pile up: a directory keeps the
        `KEEP_UNNAMED` most recently used; one open in a chat is kept."""
        if self.records is None:
            return
        for old in self.records.unnamed_beyond(cwd, KEEP_UNNAMED):
            if self.locks is None or not is_locked(self.locks, old.lock_key):
                self.records.delete(old)

    def _unlock(self, record: SessionRecord) -> None:
        lock = self._locks.pop(record.lock_key, None)
        if lock is not None:
            lock.release()

    def turn(
        self,
        prompt: str,
        state: SessionState,
        since: tuple[int, set[str]],
        outcome: dict[str, Any],
    ) -> None:
        """Append one turn to the record's history: the prompt, the agent's text, its tool
        calls. `since`: the message count and the tool call ids before the turn."""
        if self.records is None or self.record is None:
            return
        first_message, old_tools = since
        entries: list[dict[str, Any]] = [{"role": "user", "text": prompt}]
        for message in state.messages[first_message:]:
            if message.speaker == "agent" and message.text:
                entries.append({"role": "agent", "text": message.text})
        for tool_id, tool in state.tool_calls.items():
            if tool_id not in old_tools:
                entries.append(
                    {"role": "tool", "text": tool.title, "kind": tool.kind, "status": tool.status}
                )
        entries.append({"role": "result", **outcome})
        if isinstance(state.title, str):
            self.record.title = state.title
        self.records.add_turn(self.record, entries)

    def release(self) -> None:
        for lock in self._locks.values():
            lock.release()
        self._locks.clear()


def usage_of(state: SessionState) -> dict[str, Any] | None:
    """The agent's last usage report for the session (for the result record), or None."""
    if state.usage is None:
        return None
    data: dict[str, Any] = msgspec.to_builtins(state.usage)
    data.pop("sessionUpdate", None)
    return data
