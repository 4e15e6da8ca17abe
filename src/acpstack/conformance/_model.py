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
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


@dataclass(frozen=True)
class Rule:
    """The requirement a case checks: its words, and where they are written."""

    text: str
    source: str  # a documentation URL, or "schema $defs/Name"


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
    title: str
    group: str
    rule: Rule
    expected: str
    fix: str
    run: CaseFunction
    unstable: bool = False  # only with --unstable
    stdio_only: bool = False  # needs raw bytes on the agent's stdin (not over --url)


@dataclass
class CaseResult:
    id: str
    title: str
    group: str
    verdict: Verdict
    message: str
    rule: Rule
    expected: str = ""
    got: list[str] = field(default_factory=list)
    fix: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
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
