"""What a check is made of: cases, the rules they cite, verdicts and results."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpstack.conformance._context import Context

DOCS = "https://agentclientprotocol.com/protocol"


class Verdict(enum.StrEnum):
    """How a case ended. Only FAIL makes a check fail; WARN is a weakness worth fixing
    (e.g. a SHOULD of the spec), SKIP says the case could not run (and why)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


@dataclass(frozen=True)
class Rule:
    """The requirement a case checks: its words, and where they are written."""

    text: str
    """The requirement, in words."""
    source: str
    """A documentation URL, or "schema $defs/Name"."""


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


class CaseSkip(Exception):
    """Raised inside a case when something it needs is not there (e.g. no session)."""


class CaseFail(Exception):
    """Raised inside a case when the agent broke a precondition of it (e.g. it died)."""

    def __init__(self, message: str, got: list[str] | None = None, expected: str = "") -> None:
        super().__init__(message)
        self.got = got or []
        self.expected = expected


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
            "rule": {"text": self.rule.text, "source": self.rule.source},
            "seconds": round(self.seconds, 3),
        }
        if self.verdict in (Verdict.FAIL, Verdict.WARN):
            data.update(expected=self.expected, got=self.got, fix=self.fix)
        return data
