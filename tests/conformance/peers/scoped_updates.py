"""Updates for other sessions during a turn: `scoped_updates.py MODE`.

- `other-session` (correct): announces its commands to every other session it created
  while a turn runs (an update scoped right, to another session);
- `unknown-session` (broken): sends a chunk of the turn for a session id it never created.
"""

import sys
from typing import Any

from raw_agent import RawAgent, main

MODE = sys.argv[1] if len(sys.argv) > 1 else "other-session"
COMMANDS = [{"name": "help", "description": "Show help"}]


class ScopedUpdates(RawAgent):
    async def turn(self, session_id: str, text: str, cancelled: Any) -> Any:
        if MODE == "unknown-session":
            self.chunk("never-created-by-this-agent", "a chunk for no session")
        else:
            for other in self.sessions:
                if other != session_id:
                    update = {"sessionUpdate": "available_commands_update"}
                    self.update(other, {**update, "availableCommands": COMMANDS})
        return await super().turn(session_id, text, cancelled)


main(ScopedUpdates)
