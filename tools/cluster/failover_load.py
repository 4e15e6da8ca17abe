"""Many sessions streaming through a load balancer while a server dies; then a check of
every session's history. Run by tools/cluster/_failover.py (or by hand):

    python tools/cluster/failover_load.py URL SESSIONS PER_CONNECTION TURNS CHUNKS [--streams]

URL is http(s):// or ws(s)://; over HTTP `--streams` asks for a stream per session instead
of the client's default, one stream for the connection. Each connection (`reconnect=True`) opens PER_CONNECTION
sessions of tools/cluster/stream_agent.py; every session runs TURNS turns one after the
other, each streaming CHUNKS chunks. A turn ends "acknowledged" (its answer came, with
every chunk in order, once, and the model history it reported), "lost" (an error with
`data.reason`, e.g. the connection broke while it was in flight) or a problem (any other
error, or no answer). Stdout gets `{"progress": N}` lines (turns finished) while it runs,
then one JSON line: every turn (session, turn, connection, the connection's failover
epoch when it was sent, outcome, data.reason, chunks received, times), each connection's
failover events, and the problems found. Then every session is loaded on a fresh
connection and its stored history checked: every acknowledged turn complete, in order,
once. The exit status is 0 when every check held. Which server held each turn, and
whether the losses are allowed, is judged from the servers' side (tools/cluster/_account.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from acpstack import Client
from acpstack.client import Failover, FailoverEvent, connect_remote, is_connection_lost
from acpstack.rpc import run
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

CWD = "/tmp"
# Setup requests wait this long at most: 1,000 sessions opened at once on a loaded machine
# took over 120 s; the run's own timeout (and the watchdog) bound the whole anyway.
REQUEST_TIMEOUT = 300


def await_chain(coro: Any) -> str:
    """Where a task waits: each coroutine it awaits, innermost last."""
    where = []
    while coro is not None and hasattr(coro, "cr_frame"):
        frame = coro.cr_frame
        if frame is not None:
            where.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = coro.cr_await
    where.append(repr(coro)[:150])
    return " > ".join(where)


@dataclass
class TurnRecord:
    """One turn as the client saw it. `epoch`: how many times its connection had
    reconnected when the turn was sent (one more when sent during a reconnection, which
    holds it for the next server): with the servers' own logs, it says which server
    the connection was on."""

    session: str
    turn: int
    connection: int
    epoch: int
    outcome: str = "running"  # "acknowledged", "lost" (an error with data.reason), "problem"
    reason: str = ""  # data.reason of a lost turn; what went wrong for a problem
    chunks: int = 0  # this turn's chunks received (of a lost turn: before it was lost)
    sent: float = 0.0  # time.monotonic()
    ended: float = 0.0

    def row(self) -> list[Any]:
        return [
            self.session,
            self.turn,
            self.connection,
            self.epoch,
            self.outcome,
            self.reason,
            self.chunks,
            round(self.sent, 6),
            round(self.ended, 6),
        ]


@dataclass
class SessionLog:
    acknowledged: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    after_failover: int = 0  # turns acknowledged after the session's connection failed over
    problems: list[str] = field(default_factory=list)


@dataclass
class ConnectionLog:
    """What one connection's failover did: its events (kind, time, reason, attempt) and
    the requests the failover made of its own (method, sent, answered, ok), when the
    transport lets them be timed (a diagnosis: where a slow failover spent its time)."""

    epoch: int = 0
    reconnecting: bool = False
    events: list[list[Any]] = field(default_factory=list)
    asks: list[list[Any]] = field(default_factory=list)
    # The server of each epoch (the agentInfo.title its initialize answer gave, when the
    # agent says: tools/cluster/stream_agent.py does), and of the failover's last initialize.
    servers: list[str | None] = field(default_factory=list)
    answered_by: str | None = None

    def epoch_to_send(self) -> int:
        return self.epoch + self.reconnecting


class Recorder(Client):
    """Keeps the text chunks each session received, by turn (the label a chunk starts
    with), and everything in order for the final check of the stored history."""

    def __init__(self) -> None:
        self.chunks: dict[str, dict[int, list[str]]] = {}
        self.replayed: dict[str, list[tuple[str, str]]] = {}

    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        text = getattr(update.content, "text", "") if hasattr(update, "content") else ""
        if isinstance(update, acp.AgentMessageChunk):
            label = text.partition(".")[0]
            turn = int(label) if label.isdigit() else -1
            self.chunks.setdefault(params.session_id, {}).setdefault(turn, []).append(text)
            self.replayed.setdefault(params.session_id, []).append(("agent", text))
        elif isinstance(update, acp.UserMessageChunk):
            self.replayed.setdefault(params.session_id, []).append(("user", text))

    def of_turn(self, sid: str, turn: int) -> list[str]:
        return self.chunks.get(sid, {}).get(turn, [])


def lost_reason(err: RequestError) -> str | None:
    """data.reason of a turn that failed and said why (connection_lost, ...), else None."""
    data = err.data
    reason = data.get("reason") if isinstance(data, dict) else None
    return reason if isinstance(reason, str) and reason else None


def server_of(initialized: Any) -> str | None:
    """The server that answered an initialize (its agentInfo.title), from the typed answer
    or the raw one; None when it does not say."""
    if isinstance(initialized, dict):
        info = initialized.get("agentInfo")
        title = info.get("title") if isinstance(info, dict) else None
    else:
        title = getattr(getattr(initialized, "agent_info", None), "title", None)
    return title if isinstance(title, str) else None


def time_private_requests(transport: Any, log: ConnectionLog) -> None:
    """Time what a failover does of its own: the new connection (`connect`) and its requests
    (initialize, session/resume, ...), when the transport is the one whose private
    `_connect` and `_ask` do them; else nothing."""

    def timed(call: Any, name: Any) -> Any:
        async def timed_call(*args: Any) -> Any:
            sent = time.monotonic()
            ok = False
            try:
                result = await call(*args)
                ok = True
                if name(*args) == "initialize":
                    log.answered_by = server_of(result)
                return result
            finally:
                what = name(*args)
                log.asks.append([what, round(sent, 6), round(time.monotonic(), 6), ok])

        return timed_call

    if (ask := getattr(transport, "_ask", None)) is not None:
        transport._ask = timed(ask, lambda method, _params: method)
    if (connect := getattr(transport, "_connect", None)) is not None:
        transport._connect = timed(connect, lambda: "connect")


@dataclass
class Load:
    url: str
    sessions: int
    per_connection: int
    turns: int
    chunks: int
    one_stream: bool = True  # HTTP: every message on the connection's one stream (the default)
    logs: dict[str, SessionLog] = field(default_factory=dict)
    records: list[TurnRecord] = field(default_factory=list)
    connections: dict[int, ConnectionLog] = field(default_factory=dict)
    recorders: dict[str, Recorder] = field(default_factory=dict)  # session -> its client
    failovers: list[float] = field(default_factory=list)  # seconds from lost to reconnected
    # seconds from lost to each session back (its messages go out again from then on)
    session_failovers: list[float] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # session -> why not reattached
    events: dict[str, list[str]] = field(default_factory=dict)  # session -> its failovers
    done_turns: int = 0
    reported: int = 0
    last_progress: float = field(default_factory=time.monotonic)
    transports: list[Any] = field(default_factory=list)
    phases: dict[int, str] = field(default_factory=dict)  # connection -> what it is doing
    current: dict[str, int] = field(default_factory=dict)  # session -> turn in flight
    # what went wrong, counted: turns_delivered_twice, turns_missing_chunks,
    # turns_delivered_again, sessions_not_loadable, turns_stored_twice, turns_not_stored
    counts: Counter[str] = field(default_factory=Counter)

    def expected(self, turn: int, history: int) -> list[str]:
        return [f"{turn}.{i:03d}\n" for i in range(self.chunks)] + [
            f"{turn}.end history={history}\n"
        ]

    def failovers_of(self, sid: str) -> str:
        """What the failover saw of this session, for a report (it may have seen nothing)."""
        events = self.events.get(sid)
        return str(events) if events else "none (the session never failed over)"

    def progress(self) -> None:
        self.done_turns += 1
        self.last_progress = time.monotonic()
        step = max(1, self.sessions * self.turns // 100)
        if self.done_turns - self.reported >= step:
            self.reported = self.done_turns
            print(json.dumps({"progress": self.done_turns}), flush=True)

    async def connection(self, index: int) -> None:
        self.phases[index] = "connecting"
        client = Recorder()
        log = self.connections[index] = ConnectionLog()
        broke_at: list[float] = []
        failed_over: set[str] = set()

        def on_event(event: FailoverEvent) -> None:
            now = time.monotonic()
            if event.kind == "reattached":  # one session back (one per session: not logged)
                if broke_at:
                    self.session_failovers.append(now - broke_at[-1])
                return
            log.events.append([event.kind, round(now, 6), event.reason[:200], event.attempt])
            for sid in client.chunks:
                self.events.setdefault(sid, []).append(str(event))
            if event.kind == "lost":
                log.reconnecting = True
                broke_at.append(now)
                failed_over.update(client.chunks)
            elif event.kind == "reconnected":
                log.epoch += 1
                log.reconnecting = False
                log.servers.append(log.answered_by)
                if broke_at:
                    self.failovers.append(now - broke_at[-1])
                self.missing.update(event.missing)

        policy = Failover(on_event=on_event, busy_timeout=60)
        async with connect_remote(
            self.url,
            client,
            reconnect=policy,
            timeout=REQUEST_TIMEOUT,
            one_stream=self.one_stream,
        ) as conn:
            self.transports.append(conn.transport)
            time_private_requests(conn.transport, log)
            self.phases[index] = "initialize"
            log.servers.append(server_of(await conn.agent.initialize(timeout=REQUEST_TIMEOUT)))
            ids = []
            while len(ids) < self.per_connection:
                self.phases[index] = f"session/new {len(ids)}"
                try:
                    new = await conn.agent.session_new(
                        acp.NewSessionRequest(cwd=CWD, mcp_servers=[]), timeout=REQUEST_TIMEOUT
                    )
                except RequestError as err:
                    if not is_connection_lost(err):
                        raise
                    continue  # lost in a failover: ask again (an orphan may be left)
                ids.append(new.session_id)
                client.chunks[new.session_id] = {}
                self.last_progress = time.monotonic()  # for the watchdog: setup goes on
            self.phases[index] = "turns"
            await asyncio.gather(
                *(self.session(conn, client, sid, failed_over, index) for sid in ids)
            )
            self.phases[index] = "closing"
        self.phases[index] = "done"

    async def session(
        self, conn: Any, client: Recorder, sid: str, failed_over: set[str], index: int = 0
    ) -> None:
        log = self.logs[sid] = SessionLog()
        self.recorders[sid] = client
        link = self.connections.setdefault(index, ConnectionLog())
        for turn in range(self.turns):
            self.current[sid] = turn
            record = TurnRecord(sid, turn, index, link.epoch_to_send(), sent=time.monotonic())
            self.records.append(record)
            prompt = acp.PromptRequest(
                session_id=sid, prompt=[acp.TextContent(text=f"turn {turn} chunks {self.chunks}")]
            )
            try:
                await conn.agent.session_prompt(prompt, timeout=180)
            except RequestError as err:
                record.ended = time.monotonic()
                record.chunks = len(client.of_turn(sid, turn))
                reason = lost_reason(err)
                if reason is None:  # a problem, with what the failover saw
                    record.outcome, record.reason = "problem", str(err)[:300]
                    log.problems.append(f"turn {turn}: {err}; failover: {self.failovers_of(sid)}")
                    self.progress()
                    break
                record.outcome, record.reason = "lost", reason
                log.lost.append(turn)
                self.progress()
                continue
            except TimeoutError:
                record.ended = time.monotonic()
                record.outcome, record.reason = "problem", "no answer in 180 s"
                log.problems.append(f"turn {turn}: no answer in 180 s")
                self.progress()
                break
            record.ended = time.monotonic()
            record.outcome = "acknowledged"
            got = client.of_turn(sid, turn)
            record.chunks = len(got)
            history = int(got[-1].rpartition("=")[2]) if got and "=" in got[-1] else -1
            if got != self.expected(turn, history):
                log.problems.append(f"turn {turn}: {self.misdelivered(got, turn, history)}")
            elif not 2 * len(log.acknowledged) <= history <= 2 * turn:
                log.problems.append(f"turn {turn}: the model history held {history} messages")
            log.acknowledged.append(turn)
            log.after_failover += sid in failed_over
            self.progress()
        self.current.pop(sid, None)

    def misdelivered(self, got: list[str], turn: int, history: int) -> str:
        """How an acknowledged turn's chunks differ from what the agent sent."""
        want = self.expected(turn, history)
        twice = len(got) - len(set(got))
        missing = [c for c in want if c not in got]
        self.counts["turns_delivered_twice"] += twice > 0
        self.counts["turns_missing_chunks"] += bool(missing)
        return (
            f"got {len(got)} chunks of {len(want)}: {len(missing)} missing, {twice} "
            f"delivered twice{', out of order' if not (twice or missing) else ''}"
        )

    def recheck(self) -> list[str]:
        """At the end: an acknowledged turn's chunks are still exactly those it had (no
        late copy of a chunk arrived after its answer, e.g. replayed after a failover)."""
        problems = []
        for record in self.records:
            if record.outcome != "acknowledged":
                continue
            got = self.recorders[record.session].of_turn(record.session, record.turn)
            if len(got) != record.chunks:
                self.counts["turns_delivered_again"] += 1
                problems.append(
                    f"{record.session}: turn {record.turn}: {len(got) - record.chunks} chunk(s) "
                    "delivered again after its answer"
                )
        return problems

    async def watch(self, stall: float = 180) -> None:
        """Fail with what is stuck when nothing moved (no session made, no turn finished)
        for `stall` seconds: generous, a loaded machine is slow but keeps moving."""
        while True:
            await asyncio.sleep(1)
            if time.monotonic() - self.last_progress > stall:
                states = [
                    f"{getattr(t, '_state', '?')}/gen {getattr(t, 'generation', '?')}"
                    for t in self.transports
                ]
                for task in asyncio.all_tasks():  # where everything waits, for the report
                    print(
                        f"TASK {task.get_name()}: {await_chain(task.get_coro())}", file=sys.stderr
                    )
                stuck = dict(list(self.current.items())[:10])
                phases = [p for p in self.phases.values() if p != "done"]
                raise RuntimeError(
                    f"no turn finished for {stall:.0f} s; {len(self.current)} sessions "
                    f"unfinished, e.g. {stuck}; connections not done: {phases[:20]}, "
                    f"transports: {sorted(set(states))} "
                    f"({sum(s.startswith('reconnecting') for s in states)} reconnecting)"
                )

    async def verify(self, connections: int = 20) -> list[str]:
        """Load every session on fresh connections and check its stored history."""
        sids = list(self.logs)
        groups = [sids[i::connections] for i in range(connections)]
        problems: list[str] = []

        async def check(group: list[str]) -> None:
            client = Recorder()
            async with connect_remote(self.url, client, timeout=120) as conn:
                await conn.agent.initialize(timeout=REQUEST_TIMEOUT)
                for sid in group:
                    try:
                        await load_when_free(conn, sid)
                    except RequestError as err:
                        self.counts["sessions_not_loadable"] += 1
                        problems.append(f"{sid}: load failed: {err}; {self.failovers_of(sid)}")
                        continue
                    problems.extend(self.check_history(sid, client.replayed.pop(sid, [])))

        await asyncio.gather(*(check(g) for g in groups if g))
        return problems

    def check_history(self, sid: str, replayed: list[tuple[str, str]]) -> list[str]:
        stored: dict[int, list[str]] = {}
        order: list[int] = []
        for who, text in replayed:
            if who == "user":
                order.append(int(text.split()[1]))
                stored[order[-1]] = []
            elif order:
                stored[order[-1]].append(text)
        log = self.logs[sid]
        problems = []
        if order != sorted(set(order)):
            self.counts["turns_stored_twice"] += len(order) - len(set(order))
            problems.append(f"{sid}: turns stored out of order or twice: {order}")
        for turn in log.acknowledged:
            chunks = stored.get(turn) or []
            whole = len(chunks) == self.chunks + 1 and chunks[-1].startswith(f"{turn}.end ")
            if not whole or chunks[:-1] != self.expected(turn, 0)[:-1]:
                self.counts["turns_not_stored"] += 1
                problems.append(f"{sid}: acknowledged turn {turn} is not whole in the store")
        return problems


async def load_when_free(conn: Any, sid: str, patience: float = 60) -> None:
    """session/load, asked again while the session is still live on a server (a
    connection its client abandoned holds it until the server's idle timeout)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            await conn.agent.session_load(
                acp.LoadSessionRequest(session_id=sid, cwd=CWD, mcp_servers=[]), timeout=120
            )
            return
        except RequestError as err:
            busy = isinstance(err.data, dict) and err.data.get("reason") == "session_busy"
            if not busy or time.monotonic() > deadline:
                raise
        await asyncio.sleep(1)  # a server's idle reaper, in another process: nothing to await


async def measure_loop_lag(lags: list[list[float]], every: float = 0.1) -> None:
    """How late this process's event loop runs a callback due every `every` seconds:
    [when, seconds late] (a diagnosis: a busy client delays its own failover)."""
    while True:
        due = time.monotonic() + every
        await asyncio.sleep(every)
        now = time.monotonic()
        lags.append([round(now, 4), round(now - due, 4)])


async def main(
    url: str,
    sessions: int,
    per_connection: int,
    turns: int,
    chunks: int,
    one_stream: bool = True,
    first: int = 0,
) -> int:
    """`first`: the number of this process's first connection (several drivers share a
    run, each numbering its connections from its own `first`)."""
    # What the failover does, on stderr (the test shows its tail when something fails).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(relativeCreated)d %(name)s: %(message)s"))
    logging.getLogger("acpstack.client").addHandler(handler)
    logging.getLogger("acpstack.client").setLevel(logging.INFO)
    load = Load(url, sessions, per_connection, turns, chunks, one_stream=one_stream)
    started = time.monotonic()
    problems: list[str] = []
    watch = asyncio.ensure_future(load.watch())
    lags: list[list[float]] = []
    lag_probe = asyncio.ensure_future(measure_loop_lag(lags))
    try:
        work = asyncio.gather(
            *(load.connection(i) for i in range(first, first + sessions // per_connection))
        )
        await asyncio.wait([work, watch], return_when=asyncio.FIRST_COMPLETED)
        if watch.done():
            work.cancel()
            try:
                watch.result()  # raises: what is stuck
            except RuntimeError as exc:
                problems.append(f"the run stalled: {exc}")
        else:
            await work
    finally:
        watch.cancel()
        lag_probe.cancel()
    seconds = time.monotonic() - started
    problems += [f"{sid}: {p}" for sid, log in load.logs.items() for p in log.problems]
    problems += [f"{sid}: not reattached: {why}" for sid, why in load.missing.items()]
    problems += load.recheck()
    checked = time.monotonic()
    if not problems or not problems[0].startswith("the run stalled"):
        problems += await load.verify()
    result = {
        "sessions": len(load.logs),
        "turns_per_session": turns,
        "chunks_per_turn": chunks,
        "started": round(started, 6),
        "seconds": seconds,
        "verify_seconds": time.monotonic() - checked,
        "records": [record.row() for record in load.records],
        "connections": {
            index: {"events": log.events, "asks": log.asks, "servers": log.servers}
            for index, log in load.connections.items()
        },
        "loop_lag": lags,
        "failovers": load.failovers,
        "session_failovers": load.session_failovers,
        "not_reattached": load.missing,
        "counts": dict(load.counts),
        "problem_count": len(problems),
        "problems": problems[:50],
    }
    print(json.dumps(result), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    url, (sessions, per_connection, turns, chunks) = sys.argv[1], map(int, sys.argv[2:6])
    options = sys.argv[6:]
    first = int(options[options.index("--first") + 1]) if "--first" in options else 0
    one_stream = "--streams" not in options  # --streams: a stream per session
    sys.exit(run(main(url, sessions, per_connection, turns, chunks, one_stream, first)))
