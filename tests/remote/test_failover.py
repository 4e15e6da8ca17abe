"""Failover with real parts: three `acpstack serve` processes behind HAProxy (the example
configuration as it is) on a throwaway PostgreSQL, many sessions streaming, one server
killed with SIGKILL part way through (tools/cluster). And `acpstack chat --url` carrying on
when its server dies mid-turn.

The cluster runs are marked `cluster`: `./run test-pythons` leaves them out (they test
processes and engines, not the Python version). Their counts are printed at the end of the
pytest run. The same run at any size: `python -m benchmarks.failover`.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from _serving import serve_process

from tools.cluster._cluster import STREAM_AGENT
from tools.cluster._failover import run_failover
from tools.cluster._postgres import NotInstalled, free_port

TURNS, CHUNKS = 4, 20
PROMPT = r"(?:\x1b\[[0-9;?]*[a-zA-Z])*>(?:\x08|\x1b\[[0-9;?]*[a-zA-Z]| )"  # the chat's prompt


def summary(result: dict[str, Any]) -> str:
    return (
        f"failover over {result['profile']}: {result['sessions']} sessions, "
        f"{result['turns']} turns: {result['acknowledged']} acknowledged, "
        f"{result['lost']} lost in flight on the killed server, {result['recovered']} "
        f"completed after a failover ({result['failovers']} connections failed over in "
        f"{result['failover_seconds_median']:.1f} s (median), the slowest in "
        f"{result['failover_seconds_max']:.1f} s; HAProxy took out "
        f"{result['servers_marked_down']} server(s)); {result['chunks_per_s']} chunks/s, "
        f"{result['store_events_per_s']} store events/s"
    )


@pytest.mark.cluster
@pytest.mark.timeout(700)
@pytest.mark.parametrize(("profile", "sessions"), [("http", 1000), ("ws", 200)])
def test_sessions_carry_on_when_a_server_is_killed(
    profile: str, sessions: int, record_property: Any, not_installed: Any
) -> None:
    try:
        result = run_failover(
            # Generous: it ends as soon as the run does; a loaded machine needed more than 300 s.
            sessions=sessions,
            turns=TURNS,
            chunks=CHUNKS,
            profile=profile,
            timeout=600,
        )
    except NotInstalled as exc:
        not_installed(exc)
    detail = {k: v for k, v in result.items() if not k.endswith("tail")}
    # The problems first: pytest shortens a long message, and they say what went wrong.
    assert result["exit_code"] == 0, (result.get("problems"), detail, result["stderr_tail"])
    record_property("failover", summary(result))
    assert result["problems"] == []  # every acknowledged turn whole and in order in the store
    assert result["killed_after_turns"] is not None, "the run ended before the kill"
    assert result["turns"] == sessions * TURNS  # every turn acknowledged or reported lost
    # Turns were in flight on the killed server, each reported lost; those sessions, like
    # all the others, went on to the end on another server.
    assert result["lost"] > 0 and result["recovered"] > 0 and result["failovers"] > 0
    assert result["sessions_not_reattached"] == 0
    if result["servers_marked_down"] == 1:
        # Only the killed server's sessions lost a turn, one each. (On an overloaded host
        # HAProxy may also take out a live server too slow to answer its health checks:
        # its clients fail over too, and lose more turns; the counts are printed then.)
        assert result["lost"] <= sessions // 2
        assert result["sessions_with_a_lost_turn"] == result["lost"]
    # What the store holds: a prompt, the chunks, the end line and two model messages
    # for each acknowledged turn, and the lost turns' parts.
    assert result["store_events"] >= result["acknowledged"] * (CHUNKS + 4)


@pytest.mark.timeout(120)
def test_chat_reports_the_lost_turn_and_goes_on_with_the_new_server(tmp_path: Path) -> None:
    """The server dies mid-turn; another starts on the same address (as behind a load
    balancer): the chat says the turn was lost, reconnects, and the next turn runs there
    with the model's history from the store."""
    import pexpect

    port = free_port()
    env = {"ACPSTACK_STORE": str(tmp_path / "sessions.db"), "ACPSTACK_CHUNK_DELAY": "0.05"}
    args = ("--port", str(port), "--agent", STREAM_AGENT)
    with serve_process(*args, env=env) as first:
        chat = pexpect.spawn(
            sys.executable,
            ["-m", "acpstack", "chat", "--url", f"http://127.0.0.1:{port}/acp"],
            # (pexpect answers no cursor position request of prompt_toolkit's)
            env=dict(os.environ, TERM="xterm", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1"),
            encoding="utf-8",
            timeout=30,
            dimensions=(50, 160),
        )
        chat.logfile_read = transcript = io.StringIO()  # shown when the test fails
        try:
            chat.expect("connected to")
            chat.sendline("turn 0 chunks 3")
            chat.expect(r"0\.end history=0")
            chat.sendline("turn 1 chunks 400")
            chat.expect(r"1\.002")
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait(timeout=20)
            chat.expect("the connection to the agent broke while session/prompt was in flight")
            with serve_process(*args, env=env):
                chat.expect(r"reconnected to the agent; 1 session\(s\) reattached")
                chat.sendline("turn 2 chunks 2")
                # The model history came from the store: turn 0's two messages and the
                # prompt of the lost turn 1.
                chat.expect(r"2\.end history=3")
                chat.expect(PROMPT)  # the line editor reads again: a quit now is not lost
                chat.sendline("/quit")
                chat.expect(pexpect.EOF)
        except BaseException:
            print(transcript.getvalue())
            raise
        finally:
            chat.close(force=True)
