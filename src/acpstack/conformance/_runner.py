"""Runs the cases against an agent: first a start-up probe (timed, and the end of the
check when the agent does not start), then group by group, each group on its own agent
process, every case under a time budget, every process ended afterwards. Agent
processes run with data directories of their own, removed at the end."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpstack.conformance._catalog import GROUPS, all_cases
from acpstack.conformance._context import CheckOptions, Context
from acpstack.conformance._model import (
    BINDING,
    Case,
    CaseFail,
    CaseResult,
    CaseSkip,
    Level,
    Outcome,
    Rule,
    Verdict,
    failed,
    skipped,
    unanswered,
)
from acpstack.conformance._schema import MessageValidator
from acpstack.conformance._target import AgentTarget, TargetUnavailable

log = logging.getLogger("acpstack.conformance")


@dataclass
class Report:
    """What `check_agent` found."""

    target: str
    """The agent checked (its command line or URL)."""
    results: list[CaseResult] = field(default_factory=list)
    """One per case run, in run order."""
    agent_info: dict[str, Any] | None = None
    """The `agentInfo` the agent sent in its `initialize` answer."""
    seconds: float = 0.0
    """How long the whole check took."""
    startup_seconds: float | None = None
    """How long the first agent process took to answer `initialize` (None: it did not)."""
    startup_allowance: float = 0.0
    """How long a new agent process may take to answer its first request."""
    incomplete: bool = False
    """The agent never answered `initialize`: nothing could be checked."""

    def count(self, verdict: Verdict) -> int:
        """How many cases ended with `verdict`."""
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def exit_code(self) -> int:
        """1 when a case failed, 2 when nothing could be checked (no answer to
        `initialize` within the start-up allowance), else 0 (warnings and skips do not
        fail a check)."""
        if self.count(Verdict.FAIL):
            return 1
        return 2 if self.incomplete else 0


def select_cases(
    cases: Sequence[Case], only: Sequence[str] = (), *, unstable: bool = False
) -> list[Case]:
    """The cases to run: `only` holds case ids, id prefixes ("session" or "session.") or
    group names."""
    chosen = [c for c in cases if unstable or not c.unstable]
    if only:
        wanted = [w.strip() for w in only if w.strip()]
        chosen = [c for c in chosen if any(_matches(c, w) for w in wanted)]
    return chosen


def _matches(case: Case, wanted: str) -> bool:
    if wanted in (case.id, case.group):
        return True
    prefix = wanted if wanted.endswith(".") else wanted + "."
    return case.id.startswith(prefix)


def unknown_selectors(only: Sequence[str]) -> list[str]:
    """The entries of `only` that select no case at all (to report a typo before a run)."""
    cases = all_cases()
    return [w for w in only if w.strip() and not any(_matches(c, w.strip()) for c in cases)]


async def check_agent(
    target: AgentTarget,
    options: CheckOptions | None = None,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> Report:
    """Run the conformance cases against `target` and return the report.

    An agent started from a command runs with XDG_DATA_HOME, XDG_STATE_HOME,
    XDG_CACHE_HOME and ACPSTACK_STORE pointing into a temporary directory (removed at the
    end), so that the sessions the check creates do not land in the user's store;
    `options.user_state` turns that off.

    Raises `TargetUnavailable` when the agent cannot be started (or reached) at all."""
    options = options or CheckOptions()
    validator = MessageValidator(unstable=options.unstable)
    cases = select_cases(all_cases(), options.only, unstable=options.unstable)
    report = Report(target.describe(), startup_allowance=options.startup_timeout)
    began = time.monotonic()
    state = None if target.remote or options.user_state else _private_state()
    if state is not None:
        target = dataclasses.replace(target, env={**state_env(state), **(target.env or {})})
    try:
        logs: list[Any] = []
        start = await _start_up(target, options, validator, logs, report)
        if start is not None:
            report.results.append(start)
            if on_result is not None:
                on_result(start)
            if start.verdict != Verdict.PASS:
                report.seconds = time.monotonic() - began
                return report  # the agent does not start: nothing else can be checked
        allowance = later_allowance(options, report.startup_seconds)
        for group in GROUPS:
            group_cases = [c for c in cases if c.group == group]
            if not group_cases:
                continue
            ctx = Context(target, options, validator, logs=logs, startup_allowance=allowance)
            try:
                for case in group_cases:
                    result = await _run_case(ctx, case)
                    report.results.append(result)
                    if on_result is not None:
                        on_result(result)
            finally:
                await ctx.close_all()
            if report.agent_info is None:
                report.agent_info = ctx.agent_info
    finally:
        if state is not None:
            shutil.rmtree(state, ignore_errors=True)
    report.seconds = time.monotonic() - began
    return report


def later_allowance(options: CheckOptions, measured: float | None) -> float:
    """The wait for the first answer of the processes started after the start-up probe:
    three times the start-up measured plus the usual timeout (a loaded machine starts a
    program slower now and then), never more than `--startup-timeout`. An agent that
    starts at once thus waits no longer than usual for an answer it never gives."""
    if measured is None:
        return options.startup_timeout
    return min(options.startup_timeout, measured * 3 + options.timeout)


def _private_state() -> Path:
    return Path(tempfile.mkdtemp(prefix="acpstack-check-state-"))


def state_env(state: Path) -> dict[str, str]:
    """The variables that point an agent's data, state and cache directories (and
    `acpstack agent`'s session store) into `state`."""
    return {
        "XDG_DATA_HOME": str(state / "data"),
        "XDG_STATE_HOME": str(state / "state"),
        "XDG_CACHE_HOME": str(state / "cache"),
        "ACPSTACK_STORE": str(state / "acpstack-sessions.sqlite3"),
    }


START_ID = "start.initialize"
START_RULE = Rule(
    "When a rpc call is made, the Server MUST reply with a Response (JSON-RPC 2.0); the "
    "connection starts with initialize, which the agent answers.",
    "https://www.jsonrpc.org/specification#response_object; "
    "https://agentclientprotocol.com/protocol/initialization",
    Level.MUST,
)


async def _start_up(
    target: AgentTarget,
    options: CheckOptions,
    validator: MessageValidator,
    logs: list[Any],
    report: Report,
) -> CaseResult | None:
    """Start the agent once and time its answer to `initialize`, within the start-up
    allowance. None when it answered (its time is in `report`); else the one result that
    ends the check: a failure when the agent exited without answering, a warning when it
    did not answer in time (then `report.incomplete`)."""
    ctx = Context(target, options, validator, logs=logs)
    began = time.monotonic()
    try:
        conn = await ctx.open()
        reply = await ctx.initialize(conn)
        if reply.status in ("result", "error"):
            report.startup_seconds = reply.seconds
            report.agent_info = ctx.agent_info
            return None
        if reply.status == "closed":
            await _ended(conn.transport, options.startup_timeout)
        got = ctx.show(conn, reply)
    finally:
        await ctx.close_all()
    if reply.status == "closed":
        outcome = failed(
            f"the agent exited before answering initialize ({reply.seconds:.1f} s after "
            "it was started): no case can run",
            got,
            "an answer to initialize",
        )
    else:
        report.incomplete = True
        outcome = unanswered(
            f"no answer to initialize within the start-up allowance of "
            f"{options.startup_timeout:g} s: no case can run (give --startup-timeout more)",
            got,
        )
    return CaseResult(
        START_ID,
        "the agent starts and answers initialize",
        "start",
        outcome.verdict,
        outcome.message,
        START_RULE,
        outcome.expected,
        outcome.got,
        "Start within the allowance and answer initialize; see the agent's stderr above.",
        time.monotonic() - began,
    )


async def _ended(transport: Any, limit: float) -> None:
    """The agent closed its stdout: wait (up to `limit`) for its process to end and for
    its stderr to drain, so that the report shows how it ended and what it said (on a
    loaded machine the end of stdout arrives well before the exit is seen)."""
    wait_exit = getattr(transport, "wait_exit", None)
    if callable(wait_exit):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_exit(), limit)
    await transport.settle()


def _budget(options: CheckOptions) -> float:
    """The most one case may take: several requests, each with its own timeout, and the
    start of up to two new agent processes."""
    return (
        options.timeout * 6
        + options.startup_timeout * 2
        + options.eof_grace * 2
        + options.settle * 10
    )


async def _run_case(ctx: Context, case: Case) -> CaseResult:
    began = time.monotonic()
    if case.stdio_only and ctx.target.remote:
        outcome = skipped("needs the agent's stdin and stdout (not available over --url)")
    else:
        outcome = await _outcome(ctx, case)
    if outcome.verdict == Verdict.FAIL and case.rule.level not in BINDING:
        # only a MUST or a schema rule can fail; what else a case finds is a warning
        outcome = dataclasses.replace(outcome, verdict=Verdict.WARN)
    return CaseResult(
        case.id,
        case.title,
        case.group,
        outcome.verdict,
        outcome.message,
        case.rule,
        outcome.expected or case.expected,
        outcome.got,
        case.fix,
        time.monotonic() - began,
    )


async def _outcome(ctx: Context, case: Case) -> Outcome:
    budget = _budget(ctx.options)
    ctx.case_id = case.id
    try:
        async with asyncio.timeout(budget):
            return await case.run(ctx)
    except CaseSkip as exc:
        return skipped(str(exc))
    except CaseFail as exc:
        if exc.timed_out:
            return unanswered(str(exc), exc.got, exc.expected)
        return failed(str(exc), exc.got, exc.expected)
    except TimeoutError:
        return unanswered(f"the case did not finish within {budget:g} s")
    except TargetUnavailable:
        raise
    except Exception as exc:  # a bug of the checker: say so, and go on with the next case
        log.exception("case %s crashed", case.id)
        return failed(f"internal error of the checker ({exc!r}); please report it")
    finally:
        await ctx.close_fresh()
