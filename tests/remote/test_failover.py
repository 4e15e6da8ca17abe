"""Failover with real parts: three `acpstack serve` processes behind HAProxy (the example
configuration as it is) on a throwaway PostgreSQL, many sessions streaming, one server
killed with SIGKILL part way through (tools/cluster). And `acpstack chat --url` carrying on
when its server dies mid-turn.

The cluster run's verdict and its printed account come from tools/cluster/_account.py
(tests/remote/test_failover_account.py shows it failing a collapse).

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


@pytest.mark.cluster
@pytest.mark.timeout(700)
@pytest.mark.parametrize(("profile", "sessions"), [("http", 1000), ("ws", 200)])
def test_sessions_carry_on_when_a_server_is_killed(
    profile: str, sessions: int, record_property: Any, not_installed: Any
) -> None:
    """The verdict is the account's (tools/cluster/_account.py), whatever number of
    servers HAProxy took out: no turn lost but those the killed server held in flight
    (each with its data.reason), no session lost, every acknowledged turn delivered once
    and whole. Failover times are printed, never asserted (they follow the machine's load)."""
    try:
        account = run_failover(
            # Generous: it ends as soon as the run does; a loaded machine needed more than 300 s.
            sessions=sessions,
            turns=TURNS,
            chunks=CHUNKS,
            profile=profile,
            timeout=600,
        )
    except NotInstalled as exc:
        not_installed(exc)
    report = account.text()
    print(report)  # pytest shows it with a failure
    record_property("failover", report)
    assert account.problems == [], report + "\n" + account.extra["stderr_tail"][-3000:]
    # What the store holds: a prompt, the chunks, the end line and two model messages
    # for each acknowledged turn, and the lost turns' parts.
    assert account.extra["store_events"] >= account.acknowledged * (CHUNKS + 4), report


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_the_verdict_fails_a_run_that_lost_a_live_servers_turns_too(not_installed: Any) -> None:
    """A second server dies right after the killed one, unannounced (as a live server
    taken out by HAProxy): the turns it held are lost too, and the run must fail."""
    try:
        account = run_failover(sessions=100, turns=TURNS, chunks=CHUNKS, collapse=True)
    except NotInstalled as exc:
        not_installed(exc)
    report = account.text()
    assert account.lost_elsewhere, report
    assert "node2" in {t.held_by for t in account.lost_elsewhere}, report
    assert any("lost that no killed server held" in p for p in account.problems), report


@pytest.mark.timeout(120)
def test_chat_reports_the_lost_turn_and_goes_on_with_the_new_server(tmp_path: Path) -> None:
    """The server dies mid-turn; another starts on the same address (as behind a load
    balancer): the chat reconnects, says the turn was lost (sent again, the new server
    finds it began), and the next turn runs there with the model's history from the
    store."""
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
            chat.expect("the connection to the agent broke")
            with serve_process(*args, env=env):
                chat.expect(r"reconnected to the agent; 1 session\(s\) reattached")
                # the turn in flight is sent again; the new server finds it began (the
                # store has its prompt): it is lost, not run twice
                chat.expect("this prompt began before the connection broke")
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
