"""Runs the cases against an agent: group by group, each group on its own agent process,
every case under a time budget, every process ended afterwards."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acpstack.conformance._catalog import GROUPS, all_cases
from acpstack.conformance._context import CheckOptions, Context
from acpstack.conformance._model import (
    Case,
    CaseFail,
    CaseResult,
    CaseSkip,
    Outcome,
    Verdict,
    failed,
    skipped,
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

    def count(self, verdict: Verdict) -> int:
        """How many cases ended with `verdict`."""
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def exit_code(self) -> int:
        """0 when no case failed (warnings and skips do not fail a check), else 1."""
        return 1 if self.count(Verdict.FAIL) else 0


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

    Raises `TargetUnavailable` when the agent cannot be started (or reached) at all."""
    options = options or CheckOptions()
    validator = MessageValidator(unstable=options.unstable)
    cases = select_cases(all_cases(), options.only, unstable=options.unstable)
    report = Report(target.describe())
    began = time.monotonic()
    logs: list[Any] = []
    for group in GROUPS:
        group_cases = [c for c in cases if c.group == group]
        if not group_cases:
            continue
        ctx = Context(target, options, validator, logs=logs)
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
    report.seconds = time.monotonic() - began
    return report


def _budget(options: CheckOptions) -> float:
    """The most one case may take: several requests, each with its own timeout."""
    return options.timeout * 6 + options.eof_grace * 2 + options.settle * 10


async def _run_case(ctx: Context, case: Case) -> CaseResult:
    began = time.monotonic()
    if case.stdio_only and ctx.target.remote:
        outcome = skipped("needs the agent's stdin and stdout (not available over --url)")
    else:
        outcome = await _outcome(ctx, case)
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
        return failed(str(exc), exc.got, exc.expected)
    except TimeoutError:
        return failed(f"the case did not finish within {budget:g} s (the agent stopped answering)")
    except TargetUnavailable:
        raise
    except Exception as exc:  # a bug of the checker: say so, and go on with the next case
        log.exception("case %s crashed", case.id)
        return failed(f"internal error of the checker ({exc!r}); please report it")
    finally:
        await ctx.close_fresh()
