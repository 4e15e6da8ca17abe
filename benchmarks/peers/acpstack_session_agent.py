"""Benchmark agent on `SessionAgent`, the path real agents run: every update through
`Turn.say`, recorded in the session store before it is sent.

`acpstack_session_agent.py STORE`: STORE is `memory`, an SQLite file path, or a
`postgresql://` URL. Prompts as in `acpstack_agent.py`: "stream N [SIZE]" says N message
chunks of SIZE characters (an 8-digit index, then "x"), "read N [SIZE]" makes N
`fs/read_text_file` calls, anything else answers at once.
"""

from __future__ import annotations

import sys

from acpstack import serve_stdio
from acpstack.agent import MemorySessionStore, SessionAgent, Turn, open_store
from acpstack.schema import v1 as acp


class BenchSessionAgent(SessionAgent):
    async def prompt(self, turn: Turn) -> acp.StopReason:
        block = turn.prompt[0]
        command, *args = (block.text if isinstance(block, acp.TextContent) else "").split()
        if command == "stream":
            pad = "x" * (int(args[1]) - 8 if len(args) > 1 else 32)
            for i in range(int(args[0])):
                await turn.say(f"{i:08d}{pad}")
        elif command == "read":
            size = int(args[1]) if len(args) > 1 else None
            for _ in range(int(args[0])):
                text = await turn.read_file("/bench/file.txt")
                if size is not None and len(text) != size:
                    raise ValueError(f"read {len(text)} characters, not {size}")
        return "end_turn"


def main() -> None:
    where = sys.argv[1] if len(sys.argv) > 1 else "memory"
    store = MemorySessionStore() if where == "memory" else open_store(where)
    serve_stdio(BenchSessionAgent(store=store))


if __name__ == "__main__":
    main()
