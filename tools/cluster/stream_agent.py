"""A small agent for the failover runs: `acpstack serve --agent tools/cluster/stream_agent.py:make`.

Its sessions live in the store that `ACPSTACK_STORE` names (one store per process, shared
by its connections, as the reference agent's). The prompt "turn T chunks N" streams N
message chunks ("T.000", "T.001", ...), one every `ACPSTACK_CHUNK_DELAY` seconds (default
0.005: a model producing tokens), each stored before it is sent. The model's side goes
through the reference agent's `History` (events of kind `llm_message`): the prompt before
the chunks, the answer after them, and the last chunk says how many model messages the
history held when the turn began ("T.end history=K"), so a client can check that a
session continued on another server with everything its store had.

With `ACPSTACK_TURN_LOG` set (tools/cluster sets it, one file per server), each turn
appends "SESSION TURN MONOTONIC\n" to that file as it begins: after a SIGKILL the file
still says which turns the dead server held (the failover run's account reads it). Each
turn's end goes to that path + ".ended" before the turn answers: a turn in the first file
and not in the second is unfinished (what a collapse run waits for, tools/cluster).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from acpstack.agent import SessionAgent, SessionStore, Turn, open_store
from acpstack.cli._llm_history import History
from acpstack.schema import v1 as acp

_store: SessionStore | None = None
_turn_logs: dict[str, int] = {}


def note_turn(session_id: str, label: str, *, ended: bool = False) -> None:
    """One short line appended with a single write (O_APPEND): no buffer of ours to lose
    in a SIGKILL, and a few microseconds on the loop (a test tool's cost, not the library's).
    A turn's end (before its answer is sent) goes to the same path + ".ended"."""
    path = os.environ.get("ACPSTACK_TURN_LOG")
    if not path:
        return
    path += ".ended" if ended else ""
    log = _turn_logs.get(path)
    if log is None:
        log = _turn_logs[path] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(log, f"{session_id} {label} {time.monotonic():.6f}\n".encode())


def shared_store() -> SessionStore:
    global _store
    if _store is None:
        _store = open_store(os.environ["ACPSTACK_STORE"])
    return _store


class StreamAgent(SessionAgent):
    name = "acpstack-stream-agent"
    # `initialize` says which server answered (agentInfo.title): the run's account knows
    # so where each connection was, also for a turn no server began.
    title = os.environ.get("ACPSTACK_NODE_NAME")

    async def prompt(self, turn: Turn) -> acp.StopReason:
        words = turn.text.split()
        if len(words) != 4 or words[0] != "turn" or words[2] != "chunks":
            await turn.say("say: turn T chunks N")
            return "end_turn"
        label, count = words[1], int(words[3])
        note_turn(turn.session.session_id, label)
        try:
            delay = float(os.environ.get("ACPSTACK_CHUNK_DELAY", "0.005"))
            history = await History.of(turn.session)
            before = len(history.messages)
            history.append({"role": "user", "content": turn.text})
            for index in range(count):
                await turn.say(f"{label}.{index:03d}\n")
                await asyncio.sleep(delay)
            await turn.say(f"{label}.end history={before}\n")
            history.append({"role": "assistant", "content": f"{count} chunks"})
            return "end_turn"
        finally:  # however it ends: it no longer holds the turn once it answers
            note_turn(turn.session.session_id, label, ended=True)


def make() -> Any:
    return StreamAgent(store=shared_store())
