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
