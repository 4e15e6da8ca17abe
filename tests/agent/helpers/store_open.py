"""Opens a store when told to; used by the concurrent-migration test.

usage: store_open.py URL

Prints "ready", waits for one line on stdin (the go signal), opens the store and prints
"migrated" when this process upgraded the schema, "current" when it found it current.
"""

from __future__ import annotations

import logging
import sys

from acpstack.agent._store import open_store


class Seen(logging.Handler):
    migrated = False

    def emit(self, record: logging.LogRecord) -> None:
        if "migrating session store schema" in record.getMessage():
            Seen.migrated = True


def main() -> int:
    logger = logging.getLogger("acpstack.agent.store")
    logger.setLevel(logging.INFO)
    logger.addHandler(Seen())
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    store = open_store(sys.argv[1])
    store.close()
    sys.stdout.write("migrated\n" if Seen.migrated else "current\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
