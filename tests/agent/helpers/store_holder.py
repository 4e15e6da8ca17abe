"""Holds sessions of a shared store in another process; used by the lease tests.

usage: store_holder.py URL

Reads commands, one a line, and answers each with one line:
  acquire SID  -> "ok" | "busy" | "missing"
  append SID   -> the new seq | "busy" | "missing"
  release SID  -> "ok"
  close        -> "ok" (closes the store; the process then waits for EOF)
"""

from __future__ import annotations

import sys

from acpstack.agent._store import PostgresSessionStore, SessionBusy


def answer(store: PostgresSessionStore, command: str, sid: str) -> str:
    try:
        if command == "acquire":
            store.acquire(sid)
            return "ok"
        if command == "append":
            return str(store.append_event(sid, "update", b"from the holder"))
        if command == "release":
            store.release(sid)
            return "ok"
        if command == "close":
            store.close()
            return "ok"
    except SessionBusy:
        return "busy"
    except KeyError:
        return "missing"
    return f"unknown command {command!r}"


def main() -> int:
    store = PostgresSessionStore(sys.argv[1])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        command, _, sid = line.strip().partition(" ")
        sys.stdout.write(answer(store, command, sid) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
