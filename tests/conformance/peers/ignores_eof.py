"""Broken: keeps running after stdin closes."""

import asyncio

from raw_agent import RawAgent, main


class IgnoresEof(RawAgent):
    async def on_eof(self) -> None:
        await asyncio.sleep(3600)  # a leftover background loop that never ends


main(IgnoresEof)
