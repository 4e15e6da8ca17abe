"""The account of a failover run, and its verdict: which server held each turn, what was
lost where and why, how long the failovers took.

The client's side (tools/cluster/failover_load.py) says, for every turn, its outcome and
the connection and failover epoch it was sent on; the servers' side (each server's turn
log, tools/cluster/stream_agent.py) says which server began it, and when. A turn is
*held by* the last server that began it; a turn that no server began (sent to a server
already dead, or lost before the agent saw it) is held by the server its connection was
on in that epoch: the one whose `initialize` answer opened it (the stream agent names its
server in `agentInfo.title`), else the one that began the other turns sent then (which can
be wrong: a turn sent before a failover and sent again after it begins on the next
server). The turns *in flight on a killed server* are those it held that were never
acknowledged.

The verdict does not depend on how many servers HAProxy took out, nor on timing: it
fails when a turn is lost that no killed server held (so more are lost than the killed
server held in flight), when a turn failed without a `data.reason`, when a session is
lost, when an acknowledged turn was delivered twice or with chunks missing, or when the
kill hit no running turn (the run tested nothing). Failover times are reported only.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SHOWN = 12  # examples of each kind of trouble in the text


@dataclass
class Turn:
    session: str
    turn: int
    connection: int
    epoch: int
    outcome: str
    reason: str
    chunks: int
    sent: float
    ended: float
    held_by: str | None = None  # the server that held it (None: no way to tell)
    begun_on: list[str] = field(default_factory=list)  # servers that began it, in order

    @classmethod
    def of(cls, row: list[Any]) -> Turn:
        return cls(*row)


@dataclass
class ServerCounts:
    begun: int = 0  # lines in its turn log
    held: int = 0  # turns it held: begun last there, or sent to it and never begun
    acknowledged: int = 0
    in_flight_at_kill: int = 0  # held and never acknowledged (a killed server only)
    # in flight on it at the kill, sent again after the failover and completed elsewhere
    # (it had not begun them: nothing lost, nothing run twice)
    saved: int = 0
    lost: int = 0
    problems: int = 0


@dataclass
class Account:
    profile: str
    sessions: int
    turns_expected: int
    killed: dict[str, float]  # server -> time.monotonic() of its SIGKILL
    killed_after_turns: int | None
    servers: dict[str, ServerCounts]
    turns: list[Turn]
    servers_down: list[str]  # HAProxy's lines
    failovers: list[float]  # seconds from the break noticed to the sessions back
    session_failovers: list[float]  # seconds from the break noticed to each session back
    since_kill: list[float]  # seconds from the SIGKILL to each connection's sessions back
    detection: list[float]  # seconds from the SIGKILL to each connection's break noticed
    # seconds from a connection's break noticed to its new connection's initialize sent
    starts: list[float]
    asks: dict[str, list[float]]  # the failover's own requests: method -> seconds each
    # each connection's reattach after the kill: (requests, seconds from the first sent
    # to the last answered, seconds from the first answer to the last)
    reattach_spans: list[tuple[int, float, float]]
    failed_attempts: int
    not_reattached: dict[str, str]
    counts: dict[str, int]  # the load's: turns delivered twice, sessions not loadable, ...
    problems: list[str]
    notes: list[str]
    extra: dict[str, Any] = field(default_factory=dict)  # the harness's: store events, ...

    # -- the numbers ------------------------------------------------------------------

    @property
    def acknowledged(self) -> int:
        return sum(t.outcome == "acknowledged" for t in self.turns)

    @property
    def lost(self) -> list[Turn]:
        return [t for t in self.turns if t.outcome == "lost"]

    @property
    def in_flight_on_killed(self) -> int:
        return sum(self.servers[name].in_flight_at_kill for name in self.killed)

    @property
    def lost_elsewhere(self) -> list[Turn]:
        return [t for t in self.lost if t.held_by not in self.killed]

    @property
    def lost_unbegun(self) -> int:
        """Lost turns that no server had begun (sent, but queued or refused)."""
        return sum(not t.begun_on for t in self.lost)

    @property
    def sessions_lost(self) -> int:
        return len(self.not_reattached) + self.counts.get("sessions_not_loadable", 0)

    @property
    def duplicates(self) -> int:
        """Acknowledged turns delivered with a chunk twice (or again after their answer),
        and turns stored twice."""
        return sum(
            self.counts.get(k, 0)
            for k in ("turns_delivered_twice", "turns_delivered_again", "turns_stored_twice")
        )

    @property
    def incomplete(self) -> int:
        """Acknowledged turns with chunks missing, at the client or in the store."""
        return self.counts.get("turns_missing_chunks", 0) + self.counts.get("turns_not_stored", 0)

    def summary(self) -> dict[str, Any]:
        """The numbers, for a benchmark's JSON line."""
        return {
            "profile": self.profile,
            "sessions": self.sessions,
            "turns": len(self.turns),
            "acknowledged": self.acknowledged,
            "lost": len(self.lost),
            "in_flight_on_killed": self.in_flight_on_killed,
            "lost_elsewhere": len(self.lost_elsewhere),
            "lost_reasons": dict(Counter(t.reason for t in self.lost)),
            "lost_unbegun": self.lost_unbegun,
            "lost_with_chunks": sum(t.chunks > 0 for t in self.lost),
            "sessions_lost": self.sessions_lost,
            "duplicates": self.duplicates,
            "incomplete": self.incomplete,
            "problems": len(self.problems),
            "servers_marked_down": len(self.servers_down),
            "failovers": len(self.failovers),
            "failover_median_s": _median(self.failovers),
            "failover_max_s": max(self.failovers, default=0.0),
            "session_failover_median_s": _median(self.session_failovers),
            "session_failover_max_s": max(self.session_failovers, default=0.0),
            "since_kill_median_s": _median(self.since_kill),
            "since_kill_max_s": max(self.since_kill, default=0.0),
            "detection_median_s": _median(self.detection),
            "start_median_s": _median(self.starts),
            "failed_attempts": self.failed_attempts,
            "asks": {m: [len(s), _median(s), max(s)] for m, s in self.asks.items()},
            "reattach_span_median_s": _median([span for _, span, _ in self.reattach_spans]),
            "reattach_answers_spread_median_s": _median([a for _, _, a in self.reattach_spans]),
            "per_server": {n: vars(c) for n, c in self.servers.items()},
            **{k: v for k, v in self.extra.items() if not k.endswith("tail")},
        }

    # -- the words --------------------------------------------------------------------

    def text(self) -> str:
        killed = ", ".join(self.killed) or "none"
        lines = [
            f"failover over {self.profile}: {self.sessions} sessions, {len(self.turns)} of "
            f"{self.turns_expected} turns ended ({self.acknowledged} acknowledged, "
            f"{len(self.lost)} lost); killed: {killed} after {self.killed_after_turns} turns",
        ]
        for name, c in self.servers.items():
            tag = " (killed)" if name in self.killed else ""
            lines.append(
                f"  {name}{tag}: {c.held} turns held ({c.begun} begun), {c.acknowledged} acknowledged, "
                f"{c.lost} lost, {c.problems} failed otherwise or never ended"
                + (
                    f", {c.in_flight_at_kill} in flight at the kill ({c.saved} of them sent "
                    "again after the failover and completed elsewhere)"
                    if tag
                    else ""
                )
            )
        reasons = Counter((t.held_by or "unknown server", t.reason) for t in self.lost)
        lines.append(
            f"  lost: {len(self.lost)}, in flight on the killed server(s): "
            f"{self.in_flight_on_killed}; by server and data.reason: "
            + (", ".join(f"{s} {r} x{n}" for (s, r), n in sorted(reasons.items())) or "none")
        )
        lines.append(
            f"    of the lost: {self.lost_unbegun} never begun by any server (sent, not yet "
            f"taken up), {sum(t.chunks > 0 for t in self.lost)} with chunks received"
        )
        for t in self.lost_elsewhere[:SHOWN]:
            lines.append(
                f"    lost not on a killed server: session {t.session} turn {t.turn} "
                f"(connection {t.connection}, epoch {t.epoch}, held by {t.held_by}, begun "
                f"on {t.begun_on or 'no server'}): {t.reason}, {t.chunks} chunks received"
            )
        lines.append(
            f"  HAProxy took out {len(self.servers_down)} server(s)"
            + "".join(f"\n    {line}" for line in self.servers_down[:SHOWN])
        )
        lines.append(
            f"  failovers: {len(self.failovers)} connections; break noticed to sessions "
            f"back: median {_median(self.failovers):.2f} s, slowest "
            f"{max(self.failovers, default=0.0):.2f} s; SIGKILL to sessions back: median "
            f"{_median(self.since_kill):.2f} s, slowest {max(self.since_kill, default=0.0):.2f}"
            f" s; SIGKILL to break noticed: median {_median(self.detection):.2f} s; "
            f"{self.failed_attempts} reconnection attempt(s) failed"
        )
        lines.append(
            f"    each session: {len(self.session_failovers)} reattached; break noticed to the "
            f"session back (its messages going out again): median "
            f"{_median(self.session_failovers):.2f} s, slowest "
            f"{max(self.session_failovers, default=0.0):.2f} s"
        )
        if self.starts:
            lines.append(
                f"    break noticed to the new connection's initialize sent: median "
                f"{_median(self.starts):.2f} s, slowest {max(self.starts):.2f} s"
            )
        for method, seconds in sorted(self.asks.items()):
            lines.append(
                f"    the failover's {method}: {len(seconds)} requests, median "
                f"{_median(seconds):.2f} s, slowest {max(seconds):.2f} s"
            )
        if self.reattach_spans:
            spans = [span for _, span, _ in self.reattach_spans]
            spread = [a for _, _, a in self.reattach_spans]
            lines.append(
                f"    a connection's reattach requests (after the kill), first sent to last "
                f"answered: median {_median(spans):.2f} s, slowest {max(spans):.2f} s; first "
                f"answer to last: median {_median(spread):.2f} s (near 0: answered together; "
                f"near the whole: one after another)"
            )
        lines.append(
            f"  sessions lost: {self.sessions_lost}; acknowledged turns delivered twice: "
            f"{self.duplicates}, with chunks missing: {self.incomplete}"
        )
        for sid, why in list(self.not_reattached.items())[:SHOWN]:
            lines.append(f"    {sid} not reattached: {why}")
        lines += [f"  note: {note}" for note in self.notes[:SHOWN]]
        lines.append(f"  problems: {len(self.problems)}")
        lines += [f"    {p}" for p in self.problems[:SHOWN]]
        return "\n".join(lines)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def judge(
    load: dict[str, Any],
    begun: dict[str, list[tuple[str, int, float]]],
    killed: dict[str, float],
    *,
    profile: str,
    sessions: int,
    turns_per_session: int,
    killed_after_turns: int | None,
    servers_down: list[str],
    exit_code: int = 0,
    stderr_tail: str = "",
    dead: dict[str, float] | None = None,
) -> Account:
    """The account of one run, from the load's JSON line (`{}` when it printed none),
    each server's turn log and the kill times (`dead`: when each killed server was reaped;
    a turn it began after that is impossible, one begun after the SIGKILL's clock read and
    before the signal landed is not)."""
    turns = [Turn.of(row) for row in load.get("records", [])]
    problems: list[str] = []
    notes: list[str] = []
    if not load:
        problems.append(f"the load ended (exit {exit_code}) without a result: {stderr_tail[-800:]}")
    elif exit_code != 0 and not load.get("problem_count"):
        problems.append(f"the load exited with {exit_code}: {stderr_tail[-800:]}")
    problems += load.get("problems", [])
    if load.get("problem_count", 0) > len(load.get("problems", [])):
        problems.append(f"... {load['problem_count'] - len(load['problems'])} more problems")

    # Which server began each turn, and when (in order).
    starts: dict[tuple[str, int], list[tuple[float, str]]] = {}
    for server, rows in begun.items():
        for sid, turn, at in rows:
            starts.setdefault((sid, turn), []).append((at, server))
            if server in killed and at > (dead or killed).get(server, killed[server]):
                problems.append(f"{server} began session {sid} turn {turn} after its SIGKILL")
    # The server a connection was on in each epoch: where the turns sent then began.
    epochs: dict[tuple[int, int], Counter[str]] = {}
    for t in turns:
        began = sorted(starts.get((t.session, t.turn), []))
        t.begun_on = [server for _, server in began]
        if began:
            t.held_by = began[-1][1]
            epochs.setdefault((t.connection, t.epoch), Counter())[began[0][1]] += 1
    for (connection, epoch), found in epochs.items():
        if len(found) > 1:
            odd = [
                f"{t.session} turn {t.turn} on {t.begun_on}"
                for t in turns
                if (t.connection, t.epoch) == (connection, epoch)
                and t.begun_on[:1] != [found.most_common(1)[0][0]]
                and t.begun_on
            ]
            notes.append(
                f"connection {connection}'s turns sent in epoch {epoch} began on "
                f"{dict(found)}: {odd[:3]}"
            )
    # Where each connection was in each epoch, as its initialize answer said (the stream
    # agent names its server); else, as the turns sent then and begun show. A turn sent in
    # an epoch and sent again after the connection's failover begins on the next server,
    # so for a turn no server began the first is the only sure answer.
    recorded = {
        (int(connection), epoch): server
        for connection, log in load.get("connections", {}).items()
        for epoch, server in enumerate(log.get("servers", []))
        if server
    }
    for t in turns:
        if t.held_by is None:
            if (t.connection, t.epoch) in recorded:
                t.held_by = recorded[(t.connection, t.epoch)]
            elif (t.connection, t.epoch) in epochs:
                t.held_by = epochs[(t.connection, t.epoch)].most_common(1)[0][0]

    servers = {name: ServerCounts(begun=len(rows)) for name, rows in begun.items()}
    for t in turns:
        counts = servers.setdefault(t.held_by or "unknown server", ServerCounts())
        counts.held += 1
        if t.outcome == "acknowledged":
            counts.acknowledged += 1
        elif t.outcome == "lost":
            counts.lost += 1
        else:
            counts.problems += 1
        if t.held_by in killed and t.outcome != "acknowledged":
            counts.in_flight_at_kill += 1
        sent_to = epochs.get((t.connection, t.epoch))
        origin = recorded.get((t.connection, t.epoch)) or (
            sent_to.most_common(1)[0][0] if sent_to else None
        )
        if (
            t.outcome == "acknowledged"
            and origin in killed
            and t.held_by not in killed
            and origin is not None
        ):
            killed_counts = servers.setdefault(origin, ServerCounts())
            killed_counts.in_flight_at_kill += 1
            killed_counts.saved += 1

    # The verdict.
    expected = sessions * turns_per_session
    ended = [t for t in turns if t.outcome != "running"]
    if len(ended) != expected:
        problems.append(f"{expected - len(ended)} of {expected} turns never ended")
    if load and len({t.session for t in turns}) != sessions:
        problems.append(f"{sessions - len({t.session for t in turns})} sessions never ran a turn")
    if not killed:
        problems.append("no server was killed: the run ended before the kill")
    lost = [t for t in turns if t.outcome == "lost"]
    in_flight = sum(servers[n].in_flight_at_kill for n in killed if n in servers)
    elsewhere = [t for t in lost if t.held_by not in killed]
    if elsewhere:
        problems.append(
            f"{len(lost)} turns lost, {in_flight} in flight on the killed server(s): "
            f"{len(elsewhere)} lost that no killed server held"
        )
    if killed and load and in_flight == 0:
        problems.append("the kill hit no running turn: the run tested no failover")
    twice = Counter(t.session for t in lost if t.held_by in killed)
    for sid, count in twice.items():
        if count > 1:
            problems.append(
                f"session {sid} lost {count} turns on the killed server (one runs at a time)"
            )
    account = Account(
        profile=profile,
        sessions=sessions,
        turns_expected=expected,
        killed=killed,
        killed_after_turns=killed_after_turns,
        servers=servers,
        turns=turns,
        servers_down=servers_down,
        failovers=list(load.get("failovers", [])),
        session_failovers=list(load.get("session_failovers", [])),
        since_kill=[],
        detection=[],
        starts=[],
        asks={},
        reattach_spans=[],
        failed_attempts=0,
        not_reattached=dict(load.get("not_reattached", {})),
        counts=dict(load.get("counts", {})),
        problems=problems,
        notes=notes,
    )
    # The headlines, from the counts (the load's own lines above say which and why).
    if account.sessions_lost:
        problems.append(f"{account.sessions_lost} sessions lost (not reattached, or not loadable)")
    if account.duplicates:
        problems.append(f"{account.duplicates} acknowledged turns delivered or stored twice")
    if account.incomplete:
        problems.append(f"{account.incomplete} acknowledged turns with chunks missing")
    _time_failovers(account, load.get("connections", {}), min(killed.values(), default=None))
    return account


def _time_failovers(account: Account, connections: dict[str, Any], kill: float | None) -> None:
    """From each connection's events: when its break was noticed and its sessions were
    back, after the SIGKILL; and how long the failover's own requests took."""
    for log in connections.values():
        events = log.get("events", [])
        account.failed_attempts += sum(max(0, e[3] - 1) for e in events if e[0] == "reconnected")
        if kill is not None:
            after = [e for e in events if e[1] >= kill]
            lost = next((e for e in after if e[0] == "lost"), None)
            back = next((e for e in after if e[0] == "reconnected"), None)
            if lost is not None:
                account.detection.append(lost[1] - kill)
                sent = [
                    a[1] for a in log.get("asks", []) if a[0] == "initialize" and a[1] >= lost[1]
                ]
                if sent:
                    account.starts.append(min(sent) - lost[1])
            if back is not None:
                account.since_kill.append(back[1] - kill)
        for method, sent, answered, _ok in log.get("asks", []):
            account.asks.setdefault(method, []).append(answered - sent)
        reattach = [
            (sent, answered)
            for method, sent, answered, _ok in log.get("asks", [])
            if method in ("session/resume", "session/load") and kill is not None and sent >= kill
        ]
        if reattach:
            first_sent = min(sent for sent, _ in reattach)
            answers = sorted(answered for _, answered in reattach)
            account.reattach_spans.append(
                (len(reattach), answers[-1] - first_sent, answers[-1] - answers[0])
            )
