"""Broken: prints a log line to stdout, gives every session the same id, and answers
initialize twice."""

import sys
from typing import Any

from raw_agent import RawAgent, main


class StdoutGarbage(RawAgent):
    async def do_session_new(self, params: dict[str, Any]) -> Any:
        sys.stdout.write("creating a session...\n")
        sys.stdout.flush()
        return await super().do_session_new(params)

    def new_session_id(self) -> str:
        return "the-only-session"

    async def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        await super().handle(rid, method, params)
        if method == "initialize":
            self.reply(rid, {"protocolVersion": 1})  # a second answer to the same request


main(StdoutGarbage)
