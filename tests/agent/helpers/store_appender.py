"""Second-process appender for tests/agent/test_store.py.

usage: store_appender.py STORE (an SQLite path or a postgresql:// URL) SESSION_ID COUNT TAG

Opens the store, prints "ready", waits for one line on stdin (the go signal), then
appends COUNT events of kind TAG with payloads b"<TAG>-<i>" and prints the seqs it got
back as one JSON line.
"""

from __future__ import annotations

import json
import sys

from acpstack.agent._store import open_store


def main() -> int:
    db_path, session_id, count, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open_store(db_path) as store:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()
        seqs = [store.append_event(session_id, tag, f"{tag}-{i}".encode()) for i in range(count)]
    sys.stdout.write(json.dumps(seqs) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
