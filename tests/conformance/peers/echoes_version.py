"""Broken: echoes whatever protocolVersion the client asks for (99 included), and dies on
JSON that is not an object."""

import json
from typing import Any

from raw_agent import RawAgent, main


class EchoesVersion(RawAgent):
    async def do_initialize(self, params: dict[str, Any]) -> Any:
        result = await super().do_initialize(params)
        result["protocolVersion"] = params.get("protocolVersion")
        return result

    def on_line(self, line: bytes) -> None:
        try:
            value = json.loads(line)
        except ValueError:
            value = {}
        if not isinstance(value, dict):
            raise SystemExit(3)  # value.get(...) would crash here: same effect
        super().on_line(line)


main(EchoesVersion)
