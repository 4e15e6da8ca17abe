"""The floor of any process between a client and an agent (for `python -m
benchmarks.proxy_chain`): `byte_relay.py AGENT ARGV...` starts the agent and copies bytes
both ways on uvloop (the stdlib loop without it), reading with `add_reader` and writing
with blocking `os.write`. It parses nothing, so it is no conductor: what a conductor
process costs above it is its own work (routing, framing, its transports)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys


async def relay(argv: list[str]) -> None:
    loop = asyncio.get_running_loop()
    agent = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert agent.stdin is not None and agent.stdout is not None
    to_agent, from_agent = agent.stdin.fileno(), agent.stdout.fileno()
    ended = loop.create_future()

    def pump(source: int, target: int) -> None:
        try:
            data = os.read(source, 65536)
        except BlockingIOError:
            return
        if not data:
            loop.remove_reader(source)
            if not ended.done():
                ended.set_result(None)
            return
        os.write(target, data)  # blocking: the reader's pipe takes it or we wait

    for source, target in ((0, to_agent), (from_agent, 1)):
        os.set_blocking(source, False)
        loop.add_reader(source, pump, source, target)
    await ended
    agent.stdin.close()
    agent.wait()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(relay(sys.argv[1:]))
    except ImportError:
        asyncio.run(relay(sys.argv[1:]))
