"""Benchmark client on acpstack's public API, speaking protocol v2 (W1 and W2 over v2):
`acpstack_client_v2.py WORKLOAD -- AGENT ARGV...`.

In v2 the prompt's answer is only an acknowledgement: a turn ends at the idle state update
that follows it, so a timed prompt here waits for that update (W2 is the whole turn, as W2
on v1 is). The workloads, the warm-up (without its reverse requests: v2 has no client
`fs/*`) and the checks are the shared ones of `_async_workloads.py`. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from _async_workloads import Tally, measure

import acpstack
from acpstack import Client, spawn_agent
from acpstack.client import AgentPeer
from acpstack.schema import v2

V2_WORKLOADS = ("W1", "W2")


class BenchClientV2(Client, Tally):
    def __init__(self) -> None:
        Tally.__init__(self)
        self.idle: dict[str, asyncio.Future[str]] = {}  # session -> its turn's end

    async def v2_session_update(self, params: v2.UpdateSessionNotification) -> None:
        update, sid = params.update, params.session_id
        if isinstance(update, v2.AgentMessageChunk):
            assert isinstance(update.content, v2.TextContent)
            text = update.content.text
            expected = self.counts.get(sid, 0)
            if len(text) != self.size or int(text[:8]) != expected:
                self.fail(sid, text)
            self.counts[sid] = expected + 1
        elif isinstance(update, v2.IdleStateUpdate):
            turn = self.idle.pop(sid, None)
            if turn is not None and not turn.done():
                turn.set_result(str(update.stop_reason))


INIT = v2.InitializeRequest(
    protocol_version=2, info=v2.Implementation(name="acpstack-bench-v2", version="1")
)
NEW = v2.NewSessionRequest(cwd="/tmp")


class Driver:
    """What `_async_workloads` needs, over v2: a prompt is sent and waited for to its idle."""

    reverse_requests = False  # v2 has no client fs/terminal methods to call back

    def __init__(self, tally: BenchClientV2, peer: AgentPeer, pid: int) -> None:
        self.tally, self.agent_pid, self.peer = tally, pid, peer

    async def new_session(self) -> str:
        result = await self.peer.call("session/new", NEW)
        return str(result.session_id)

    def prompt_request(self, sid: str, text: str) -> Any:
        return v2.PromptRequest(session_id=sid, prompt=[v2.TextContent(text=text)])

    async def send_prompt(self, request: v2.PromptRequest) -> str:
        idle = asyncio.get_running_loop().create_future()
        self.tally.idle[request.session_id] = idle
        await self.peer.call("session/prompt", request)
        stop = await asyncio.wait_for(idle, 60)
        if stop != "end_turn":
            raise SystemExit(f"turn ended {stop!r}")
        return stop


async def run(workload: str, agent: list[str]) -> dict[str, object]:
    if workload not in V2_WORKLOADS:
        raise SystemExit(f"workload {workload} is not run over protocol v2")
    client = BenchClientV2()
    started = time.perf_counter()
    async with spawn_agent(agent, client) as conn:
        await conn.agent.initialize(INIT)
        if conn.agent.protocol_version != 2:
            raise SystemExit(f"the agent answered protocol {conn.agent.protocol_version}, not 2")
        driver = Driver(client, conn.agent, conn.transport.pid)  # type: ignore[attr-defined]
        return await measure(workload, driver, started)


def main() -> None:
    workload, agent = sys.argv[1], sys.argv[3:]
    print(json.dumps(acpstack.run(run(workload, agent))))


if __name__ == "__main__":
    main()
