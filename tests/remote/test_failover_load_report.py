"""tools/cluster/failover_load.py reports a turn that failed for another reason than a lost
connection, also for a session that never failed over (it raised KeyError there before).
The agent is real, over an in-memory pair: it refuses every prompt."""

from __future__ import annotations

from acpstack.agent import Agent, connect_agent
from acpstack.client import connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import memory_pair
from acpstack.wire import RequestError
from tools.cluster.failover_load import Load, Recorder


class Refusing(Agent):
    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        raise RequestError.invalid_params({"sessionId": params.session_id}, "no turns here")


async def test_a_failed_turn_of_a_session_that_never_failed_over_is_reported() -> None:
    agent_side, client_side = memory_pair()
    client = Recorder()
    connected = connect_client(client, client_side)
    async with connect_agent(Refusing(), agent_side), connected.connection:
        await connected.agent.initialize()
        load = Load("memory://", sessions=1, per_connection=1, turns=3, chunks=2)
        await load.session(connected, client, "s1", failed_over=set())
    assert load.logs["s1"].problems == [
        "turn 0: no turns here (code -32602); failover: none (the session never failed over)"
    ]
    assert load.logs["s1"].acknowledged == [] and load.done_turns == 1


class Stuttering(Agent):
    """Streams a turn as stream_agent.py does (two chunks and the end line), except that
    turn 0 sends chunk 1 twice and turn 1 leaves out chunk 0: the load must call those
    turns misdelivered, though they were acknowledged."""

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        turn = int(params.prompt[0].text.split()[1])  # type: ignore[union-attr]
        chunks = [f"{turn}.000\n", f"{turn}.001\n", f"{turn}.end history={2 * turn}\n"]
        if turn == 0:
            chunks.insert(1, chunks[1])
        elif turn == 1:
            chunks.pop(0)
        for chunk in chunks:
            update = acp.AgentMessageChunk(content=acp.TextContent(text=chunk))
            await self.client.session_update(params.session_id, update)
        return acp.PromptResponse(stop_reason="end_turn")


async def test_an_acknowledged_turn_with_a_chunk_twice_or_missing_is_a_problem() -> None:
    agent_side, client_side = memory_pair()
    client = Recorder()
    connected = connect_client(client, client_side)
    async with connect_agent(Stuttering(), agent_side), connected.connection:
        await connected.agent.initialize()
        load = Load("memory://", sessions=1, per_connection=1, turns=3, chunks=2)
        await load.session(connected, client, "s1", failed_over=set())
    assert load.logs["s1"].acknowledged == [0, 1, 2]
    assert load.logs["s1"].problems == [
        "turn 0: got 4 chunks of 3: 0 missing, 1 delivered twice",
        "turn 1: got 2 chunks of 3: 1 missing, 0 delivered twice",
    ]
    assert load.counts["turns_delivered_twice"] == 1 and load.counts["turns_missing_chunks"] == 1
    assert [r.outcome for r in load.records] == ["acknowledged"] * 3
    # A copy of an acknowledged turn's chunk arriving later is found at the end.
    assert load.recheck() == []
    client.chunks["s1"][2].append("2.001\n")
    assert load.recheck() == ["s1: turn 2: 1 chunk(s) delivered again after its answer"]
