"""A proxy that adds the project's rules file (AGENTS.md by default) to every prompt.

Run it in a chain:  acpstack conduct --proxy 'python rules.py' -- acpstack agent
RULES_FILE names another file; it is read at each prompt, so edits apply at once.
"""

import os
from pathlib import Path
from typing import Any

from acpstack.proxy import Proxy


class Rules(Proxy):
    name = "rules"

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(os.environ.get("RULES_FILE", "AGENTS.md"))
        if path.is_file():
            rules = path.read_text(encoding="utf-8")
            params["prompt"].append(
                {"type": "text", "text": f"\n\nProject rules ({path}):\n{rules}"}
            )
        return params


if __name__ == "__main__":
    Rules().run()
