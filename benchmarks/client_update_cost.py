"""CPU per streamed chunk on the client side: `python -m benchmarks.client_update_cost`.

What a client application runs for each `session/update` it receives: the frame read by
the protocol state (sans-IO, no pipe), then the handler. Three clients, over protocol v1
and v2: a bare `Client` whose handler does nothing (the wire's share), and
`ClientRuntime`, which reads the update straight into an event and applies it to the
session's `SessionState` (what `acpstack chat` and every harness on the runtime pay).
Each run feeds `--updates` 40-byte `agent_message_chunk`s at once; the figure is the
median over `--reps` runs of process CPU time per chunk, in µs.

    python -m benchmarks.client_update_cost [--updates 20000] [--reps 7]

To compare two versions of the library, run it with each on `PYTHONPATH` (say, a
`git worktree` of the older commit's `src/`), alternating.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from acpstack.client import Client, ClientRuntime
from acpstack.schema import v1 as acp
from acpstack.schema import v2
from acpstack.wire import IncomingNotification, ProtocolState


class BareClient(Client):
    """Takes every update and does nothing with it: the wire's share of the cost."""

    async def session_update(self, params: Any) -> None:
        pass

    async def v2_session_update(self, params: Any) -> None:
        pass


def _connected(client: Client, version: int) -> ProtocolState:
    state = ProtocolState("client", versions=(1, 2))
    incoming = getattr(client, "incoming_params", None)
    if incoming and hasattr(state, "take_params_as"):  # (older versions read v1's types)
        state.take_params_as(incoming)
    if version == 2:
        info = v2.Implementation(name="bench", version="1")
        params: Any = v2.InitializeRequest(protocol_version=2, info=info)
        result: dict[str, Any] = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}
    else:
        params, result = acp.InitializeRequest(protocol_version=1), {"protocolVersion": 1}
    rid, _, _ = state.start_request("initialize", params)
    state.receive(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
    return state


def _frames(count: int) -> bytes:
    text = "x" * 40
    update = {"sessionUpdate": "agent_message_chunk", "messageId": "m1"}
    frame = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {**update, "content": {"type": "text", "text": text}},
        },
    }
    return (json.dumps(frame).encode() + b"\n") * count


def _cost(make: Callable[[], Client], version: int, frames: bytes, count: int) -> float:
    """CPU µs per chunk: the frames read and each update handed to the client's handler."""
    client = make()
    if isinstance(client, ClientRuntime):
        client.register_session("s", "/tmp")
    state = _connected(client, version)
    handler = client.v2_session_update if version == 2 else client.session_update  # type: ignore[attr-defined]
    start = time.process_time()
    for event in state.receive(frames):
        assert isinstance(event, IncomingNotification)
        step = handler(event.params)
        try:
            step.send(None)  # the handlers never wait: run each to its end here
        except StopIteration:
            pass
    spent = time.process_time() - start
    if isinstance(client, ClientRuntime):
        assert len(client.sessions["s"].state.messages[-1].content) == count
    return spent / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    frames = _frames(args.updates)
    clients: dict[str, Callable[[], Client]] = {
        "bare Client": BareClient,
        "ClientRuntime": ClientRuntime,
    }
    print(f"CPU per chunk, µs (median of {args.reps} runs of {args.updates:,} chunks)")
    for version in (1, 2):
        for name, make in clients.items():
            runs = [_cost(make, version, frames, args.updates) for _ in range(args.reps)]
            print(f"  v{version} {name:<14} {statistics.median(runs):6.2f}")


if __name__ == "__main__":
    main()
