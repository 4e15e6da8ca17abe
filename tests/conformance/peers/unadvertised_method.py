"""Broken: answers session/load and session/list although it advertises neither."""

from typing import Any

from raw_agent import RawAgent, main


class Unadvertised(RawAgent):
    async def do_session_load(self, params: dict[str, Any]) -> Any:
        return {}

    async def do_session_list(self, params: dict[str, Any]) -> Any:
        return {"sessions": []}


main(Unadvertised)
