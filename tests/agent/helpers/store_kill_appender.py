"""Appends forever until killed; used by the kill -9 durability test.

usage: store_kill_appender.py STORE (an SQLite path or a postgresql:// URL) SESSION_ID FIRST_SEQ

Appends events to SESSION_ID in a tight loop. The event with seq N carries
payload_for(N) (keep in sync with tests/agent/test_store.py). After each append has
committed it writes N to stdout and flushes: that line is the acknowledgement.
"""

from __future__ import annotations

import sys

from acpstack.agent._store import open_store


def payload_for(seq: int) -> bytes:
    # Binary, variable length (9..264 bytes), all byte values, NUL included.
    return seq.to_bytes(8, "big") + bytes(range(256))[: seq % 256] + b"\x00"


def main() -> int:
    db_path, session_id, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = open_store(db_path)
    out = sys.stdout
    while True:
        got = store.append_event(session_id, "update", payload_for(seq))
        if got != seq:
            sys.stderr.write(f"expected seq {seq}, store returned {got}\n")
            return 1
        out.write(f"{seq}\n")
        out.flush()
        seq += 1


if __name__ == "__main__":
    sys.exit(main())
