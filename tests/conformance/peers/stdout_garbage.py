"""Broken: prints a log line to stdout, and answers session/new with the same id twice."""

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


main(StdoutGarbage)
