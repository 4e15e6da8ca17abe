"""What a check is made of: cases, the rules they cite, verdicts and results."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpstack.conformance._context import Context
    from acpstack.conformance._probe import Reply

DOCS = "https://agentclientprotocol.com/protocol"


class Verdict(enum.StrEnum):
    """How a case ended. Only FAIL makes a check fail, and only a case whose rule is a
    MUST or a schema rule can fail (see `Level`); WARN is a weakness worth fixing (a
    SHOULD, a leniency, a robustness finding) or an outcome the checker could not
    establish (no answer in time); SKIP says the case could not run (and why)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


class Level(enum.StrEnum):
    """How binding the rule a case checks is. Only MUST and SCHEMA rules can fail a
    check; a case of any other level reports what it finds as a warning."""

    MUST = "MUST"
    """A MUST (or MUST NOT) of the spec or of JSON-RPC 2.0, quoted in the rule."""
    SCHEMA = "schema"
    """A rule of the official JSON Schema (the source names the `$defs`)."""
    SHOULD = "SHOULD"
    """A SHOULD of the spec, or what clients rely on without a MUST behind it."""
    MAY = "MAY"
    """Something the spec leaves to the agent: a finding is advice."""
    ROBUSTNESS = "robustness"
    """Input a client MUST NOT send (bad JSON, not JSON-RPC 2.0, invalid params): how
    the agent copes is worth knowing, but breaks no rule of the agent's."""
    DEVIATION = "deviation"
    """A known deviation of real agents from what clients expect."""


#: The levels whose findings are failures.
BINDING = frozenset({Level.MUST, Level.SCHEMA})


@dataclass(frozen=True)
class Rule:
    """The requirement a case checks: its words, how binding it is, where it is written."""

    text: str
    """The requirement, in words (a MUST rule quotes its MUST)."""
    source: str
    """A documentation URL, or "schema $defs/Name"."""
    level: Level = Level.MUST
    """How binding it is: only MUST and SCHEMA rules can fail a check."""

    @property
    def cites(self) -> str:
        """One line for a report: the level and where the rule is written."""
        return f"{self.level.value}: {self.source}"


@dataclass
class Outcome:
    """What a case found. `got` holds the frames (or facts) that show it."""

    verdict: Verdict
    message: str
    got: list[str] = field(default_factory=list)
    expected: str = ""


def passed(message: str, got: list[str] | None = None) -> Outcome:
    return Outcome(Verdict.PASS, message, got or [])


def failed(message: str, got: list[str] | None = None, expected: str = "") -> Outcome:
    return Outcome(Verdict.FAIL, message, got or [], expected)


def warned(message: str, got: list[str] | None = None, expected: str = "") -> Outcome:
    return Outcome(Verdict.WARN, message, got or [], expected)


def skipped(reason: str) -> Outcome:
    return Outcome(Verdict.SKIP, reason)


def unanswered(message: str, got: list[str] | None = None, expected: str = "") -> Outcome:
    """A request got no answer in time: the checker cannot tell a slow agent from a
    stuck one, so this is a warning that says so, never a rule failure."""
    note = " (not judged: a slow agent and a stuck one look the same; try a longer --timeout)"
    return Outcome(Verdict.WARN, message + note, got or [], expected)


def missing_answer(what: str, reply: Reply, got: list[str] | None = None) -> Outcome:
    """The outcome for a request that was not answered: a warning after a timeout (see
    `unanswered`), a failure when the agent went away (a request MUST get a response)."""
    if reply.status == "timeout":
        return unanswered(f"{what} got {reply.describe()}", got)
    return failed(f"{what} got {reply.describe()}", got)


class CaseSkip(Exception):
    """Raised inside a case when something it needs is not there (e.g. no session)."""


class CaseFail(Exception):
    """Raised inside a case when the agent broke a precondition of it (e.g. it died);
    `timed_out`: it only did not answer in time, which ends the case with a warning."""

    def __init__(
        self,
        message: str,
        got: list[str] | None = None,
        expected: str = "",
        *,
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.got = got or []
        self.expected = expected
        self.timed_out = timed_out


CaseFunction = Callable[["Context"], Awaitable[Outcome]]


@dataclass(frozen=True)
class Case:
    """One check. `group` decides which agent process it shares (see the runner)."""

    id: str
    """Dotted and stable, e.g. "init.protocol-v1"; `select_cases` matches it."""
    title: str
    """One line for people."""
    group: str
    """One of `GROUPS`; the cases of a group run in order on one agent process."""
    rule: Rule
    """The requirement it checks."""
    expected: str
    """What a conforming agent does."""
    fix: str
    """How to fix an agent that fails."""
    run: CaseFunction
    """The coroutine function that runs the case."""
    unstable: bool = False
    """Runs only when unstable methods are checked (`--unstable`)."""
    stdio_only: bool = False
    """Needs raw bytes on the agent's stdin, so it is skipped over a URL."""


@dataclass
class CaseResult:
    """What one case found, for a report."""

    id: str
    """The case's id."""
    title: str
    """The case's title."""
    group: str
    """The case's group."""
    verdict: Verdict
    """How it ended."""
    message: str
    """One line: what was found."""
    rule: Rule
    """The requirement checked."""
    expected: str = ""
    """What a conforming agent does."""
    got: list[str] = field(default_factory=list)
    """The frames (or facts) that show what the agent did, each shortened."""
    fix: str = ""
    """How to fix the agent."""
    seconds: float = 0.0
    """How long the case took."""

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object (for `--json`); `expected`, `got` and `fix` are
        included only for a failure or warning."""
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "group": self.group,
            "verdict": self.verdict.value,
            "message": self.message,
            "rule": {
                "text": self.rule.text,
                "source": self.rule.source,
                "level": self.rule.level.value,
            },
            "cites": self.rule.cites,
            "seconds": round(self.seconds, 3),
        }
        if self.verdict in (Verdict.FAIL, Verdict.WARN):
            data.update(expected=self.expected, got=self.got, fix=self.fix)
        return data
