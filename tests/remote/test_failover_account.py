"""The failover run's verdict (tools/cluster/_account.py) on runs described by hand: it
passes a run that lost only what the killed server held, and fails a collapse (a live
server taken out, a turn lost on it), whatever number of servers went down; and its
account says what happened. The real run: tests/remote/test_failover.py."""

from __future__ import annotations

from typing import Any

from tools.cluster._account import Account, judge

KILL = 100.0
DOWN_NODE1 = "Server acpstack/node1 is DOWN, reason: Layer4 connection problem"
DOWN_NODE2 = "Server acpstack/node2 is DOWN, reason: Layer7 timeout, check duration: 10001ms"


class Run:
    """Two connections of two sessions, two turns each: connection 0 on node1 (killed
    at KILL), connection 1 on node2. Each session's turn 0 is acknowledged; turn 1 as
    the test says."""

    def __init__(self) -> None:
        self.records: list[list[Any]] = []
        self.begun: dict[str, list[tuple[str, int, float]]] = {"node1": [], "node2": []}
        self.events: dict[int, list[list[Any]]] = {0: [], 1: []}
        self.asks: dict[int, list[list[Any]]] = {0: [], 1: []}
        # the server of each epoch, as the initialize answers said (empty: not said)
        self.servers: dict[int, list[str]] = {0: [], 1: []}
        self.problems: list[str] = []
        self.counts: dict[str, int] = {}
        self.not_reattached: dict[str, str] = {}
        for connection, node in ((0, "node1"), (1, "node2")):
            for sid in (f"{node}-a", f"{node}-b"):
                self.turn(sid, 0, connection, 0, "acknowledged", begun=[node])

    def turn(
        self,
        sid: str,
        turn: int,
        connection: int,
        epoch: int,
        outcome: str,
        reason: str = "",
        begun: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        self.records.append([sid, turn, connection, epoch, outcome, reason, 3, 90.0, 101.0])
        for at, node in enumerate(begun):
            self.begun[node].append((sid, turn, 90.0 + at))

    def failover(self, connection: int, lost: float, back: float) -> None:
        self.events[connection] += [["lost", lost, "it broke", 0], ["reconnected", back, "", 1]]

    def judge(
        self, servers_down: list[str] | None = None, killed: bool = True, dead: float | None = None
    ) -> Account:
        load = {
            "records": self.records,
            "connections": {
                str(c): {"events": e, "asks": self.asks[c], "servers": self.servers[c]}
                for c, e in self.events.items()
            },
            "failovers": [0.4],
            "not_reattached": self.not_reattached,
            "counts": self.counts,
            "problem_count": len(self.problems),
            "problems": self.problems,
        }
        return judge(
            load,
            self.begun,
            {"node1": KILL} if killed else {},
            profile="http",
            sessions=4,
            turns_per_session=2,
            killed_after_turns=4,
            servers_down=[DOWN_NODE1] if servers_down is None else servers_down,
            exit_code=1 if self.problems else 0,
            dead=None if dead is None else {"node1": dead},
        )


def lost_on_the_killed_server(run: Run) -> None:
    """Both sessions of node1 had turn 1 running when it died; node2's finished."""
    run.turn("node1-a", 1, 0, 0, "lost", "connection_lost", begun=["node1"])
    run.turn("node1-b", 1, 0, 0, "lost", "connection_lost")  # sent, never begun
    run.turn("node2-a", 1, 1, 0, "acknowledged", begun=["node2"])
    run.turn("node2-b", 1, 1, 0, "acknowledged", begun=["node2"])
    run.failover(0, KILL + 0.05, KILL + 0.6)
    run.asks[0] += [["initialize", KILL + 0.05, KILL + 0.1, True]] + [
        ["session/resume", KILL + 0.1, KILL + answered, True] for answered in (0.3, 0.5)
    ]


def test_a_run_that_lost_only_what_the_killed_server_held_passes() -> None:
    run = Run()
    lost_on_the_killed_server(run)
    account = run.judge()
    assert account.problems == [], account.text()
    assert (len(account.lost), account.in_flight_on_killed) == (2, 2)
    # the turn node1 never began is its own: it was sent on the connection node1 held
    assert {t.held_by for t in account.lost} == {"node1"}
    text = account.text()
    assert "node1 (killed): 4 turns held (3 begun), 2 acknowledged, 2 lost" in text
    assert "node1 connection_lost x2" in text
    assert "SIGKILL to sessions back: median 0.60 s" in text
    assert "break noticed to sessions back: median 0.40 s" in text
    assert "of the lost: 1 never begun by any server" in text
    assert "the failover's session/resume: 2 requests, median 0.30 s, slowest 0.40 s" in text
    assert "first sent to last answered: median 0.40 s" in text
    assert "first answer to last: median 0.20 s" in text


def test_a_collapse_fails_and_says_where_the_turns_were_lost() -> None:
    """A live server too slow for its health checks is taken out: its turns are lost
    too. The verdict fails, with two servers down as with one."""
    run = Run()
    run.turn("node1-a", 1, 0, 0, "lost", "connection_lost", begun=["node1"])
    run.turn("node1-b", 1, 0, 0, "lost", "connection_lost", begun=["node1"])
    run.turn("node2-a", 1, 1, 0, "lost", "connection_lost", begun=["node2"])
    run.turn("node2-b", 1, 1, 0, "lost", "connection_lost")  # sent to node2, never begun
    run.failover(0, KILL + 0.05, KILL + 3)
    run.failover(1, KILL + 12, KILL + 20)
    account = run.judge(servers_down=[DOWN_NODE1, DOWN_NODE2])
    assert account.problems == [
        "4 turns lost, 2 in flight on the killed server(s): 2 lost that no killed server held"
    ]
    assert len(account.lost_elsewhere) == 2
    text = account.text()
    assert "node2: 4 turns held (3 begun), 2 acknowledged, 2 lost" in text
    assert "lost not on a killed server: session node2-a turn 1" in text
    assert "HAProxy took out 2 server(s)" in text and "Layer7 timeout" in text
    assert "SIGKILL to sessions back: median 11.50 s, slowest 20.00 s" in text
    # With one server down the verdict is the same.
    assert run.judge(servers_down=[DOWN_NODE1]).problems == account.problems


def test_a_turn_failed_without_a_reason_or_never_ended_fails() -> None:
    run = Run()
    lost_on_the_killed_server(run)
    run.records[-1][4:6] = ["problem", "no answer in 180 s"]
    run.problems.append("node2-b: turn 1: no answer in 180 s")
    run.records[-2][4] = "running"  # the load stalled with it in flight
    account = run.judge()
    assert "node2-b: turn 1: no answer in 180 s" in account.problems
    assert "1 of 8 turns never ended" in account.problems
    text = account.text()
    assert "node2: 4 turns held (4 begun), 2 acknowledged, 0 lost, 2 failed otherwise" in text


def test_a_turn_lost_on_a_new_server_after_the_failover_is_not_the_killed_ones() -> None:
    """node1's connection failed over to node2 (epoch 1); a turn sent there and lost
    before it began is node2's, not the killed server's: the verdict fails."""
    run = Run()
    run.turn("node1-a", 1, 0, 1, "lost", "connection_lost")  # sent in epoch 1, never begun
    run.turn("node1-b", 1, 0, 1, "acknowledged", begun=["node2"])  # epoch 1 is on node2
    run.turn("node2-a", 1, 1, 0, "acknowledged", begun=["node2"])
    run.turn("node2-b", 1, 1, 0, "acknowledged", begun=["node2"])
    account = run.judge()
    assert [t.held_by for t in account.lost] == ["node2"]
    assert account.problems[0].endswith("1 lost that no killed server held")
    # Had it begun on node1 (the server its session was on before), it would be node1's.
    run.begun["node1"].append(("node1-a", 1, 95.0))
    assert run.judge().problems == []


def test_a_turn_sent_to_the_killed_server_is_its_own_when_the_epoch_began_nothing_there() -> None:
    """A connection set up just before the kill: node1 began none of what it sent, its
    turns in flight were sent again after the failover and began on node2, and one was
    lost unbegun. It was in flight on node1, as node1's initialize answer said; the
    turns that began on node2 do not make it node2's (a run failed on that once)."""
    run = Run()
    run.records = [r for r in run.records if r[2] != 0]  # connection 0 ran no turn before
    run.begun["node1"].clear()
    run.turn("node1-a", 0, 0, 0, "acknowledged", begun=["node2"])  # sent again, began there
    run.turn("node1-b", 0, 0, 0, "lost", "connection_lost")  # never begun anywhere
    run.turn("node1-a", 1, 0, 1, "acknowledged", begun=["node2"])
    run.turn("node1-b", 1, 0, 1, "acknowledged", begun=["node2"])
    for sid in ("node2-a", "node2-b"):
        run.turn(sid, 1, 1, 0, "acknowledged", begun=["node2"])
    run.failover(0, KILL + 0.05, KILL + 0.6)
    run.servers = {0: ["node1", "node2"], 1: ["node2"]}
    account = run.judge()
    assert [t.held_by for t in account.lost] == ["node1"], account.text()
    assert not any("no killed server held" in p for p in account.problems), account.text()
    # Without the servers' names, the turns that began show only node2: the turn is
    # counted as lost on a live server, and the verdict fails.
    run.servers = {0: [], 1: []}
    assert [t.held_by for t in run.judge().lost] == ["node2"]
    # The names never hide a live server's loss: a turn sent to node2 and lost is node2's.
    run.servers = {0: ["node1", "node2"], 1: ["node2"]}
    run.records[-1][4:6] = ["lost", "connection_lost"]
    assert run.judge().problems[0].endswith("1 lost that no killed server held")


def test_sessions_lost_duplicates_and_a_kill_that_hit_nothing_fail() -> None:
    run = Run()
    for sid, node, connection in (("node1-a", "node1", 0), ("node1-b", "node1", 0)):
        run.turn(sid, 1, connection, 0, "acknowledged", begun=[node])
    for sid in ("node2-a", "node2-b"):
        run.turn(sid, 1, 1, 0, "acknowledged", begun=["node2"])
    run.not_reattached["node1-a"] = "session_busy"
    run.problems += ["node1-a: not reattached: session_busy", "node2-a: turn 1: got 22 chunks"]
    run.counts.update(turns_delivered_twice=1, sessions_not_loadable=1, turns_not_stored=1)
    account = run.judge()
    assert account.sessions_lost == 2 and account.duplicates == 1
    assert "the kill hit no running turn: the run tested no failover" in account.problems
    assert "2 sessions lost (not reattached, or not loadable)" in account.problems
    assert "1 acknowledged turns delivered or stored twice" in account.problems
    assert "1 acknowledged turns with chunks missing" in account.problems
    assert "sessions lost: 2; acknowledged turns delivered twice: 1" in account.text()
    assert "no server was killed: the run ended before the kill" in run.judge(killed=False).problems


def test_a_load_that_printed_nothing_fails_with_its_stderr() -> None:
    account = judge(
        {},
        {"node1": []},
        {"node1": KILL},
        profile="ws",
        sessions=4,
        turns_per_session=2,
        killed_after_turns=None,
        servers_down=[],
        exit_code=1,
        stderr_tail="Traceback ... ConnectionRefusedError",
    )
    assert account.problems[0].startswith("the load ended (exit 1) without a result: Traceback")
    assert "8 of 8 turns never ended" in account.problems


def test_a_turn_begun_while_the_kill_lands_is_not_one_begun_after_it() -> None:
    # The SIGKILL's time is read just before the signal is sent; on a loaded machine the
    # server may begin a turn in between. Only a turn begun after it was reaped is wrong.
    run = Run()
    lost_on_the_killed_server(run)
    run.begun["node1"].append(("node1-a", 2, KILL + 0.01))
    assert run.judge(dead=KILL + 0.02).problems == []
    late = "node1 began session node1-a turn 2 after its SIGKILL"
    assert late in run.judge(dead=KILL + 0.005).problems
    assert late in run.judge().problems  # without the reaping time: the SIGKILL's own
