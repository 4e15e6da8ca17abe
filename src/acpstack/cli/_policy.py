"""How `acpstack chat` answers permission requests, and what it tells the user about them.

The user's rules come first, in this order: `--permissions FILE`, `--allow KIND`,
`--approve-all` (an allow-everything rule). What no rule decides goes to the fallback:
the user at the keyboard (interactive), else a rejection. `--deny-all` rejects everything.
The counts feed exit code 5 (every request denied or cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rich.text import Text

from acpstack.client import DenyAll, PermissionPolicy, Rule, Rules
from acpstack.schema import v1 as acp

Ask = Callable[[acp.RequestPermissionRequest], Awaitable["acp.PermissionOption | None"]]
Report = Callable[[Text], None]


@dataclass
class PermissionCounts:
    requested: int = 0
    approved: int = 0
    denied: int = 0  # rejected, or cancelled (the turn was cancelled while we asked)

    @property
    def all_denied(self) -> bool:
        return self.requested > 0 and self.approved == 0


@dataclass
class LabelledRule:
    rule: Rule
    label: str  # what the user wrote: "--approve-all", "--allow edit", "rule 2 of FILE"


class _AskUser:
    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        return await self.ask(request)


@dataclass
class ChatPolicy:
    rules: list[LabelledRule]
    ask: Ask | None  # None: nobody to ask (headless), so what no rule decides is rejected
    report: Report | None  # where decisions made without the user are announced
    deny_all: bool = False
    counts: PermissionCounts = field(default_factory=PermissionCounts)
    fallback_reason: str = "no --approve-all, --allow KIND or --permissions rule allows it"

    def __post_init__(self) -> None:
        fallback: PermissionPolicy = _AskUser(self.ask) if self.ask is not None else DenyAll()
        self._policy = Rules(rules=[r.rule for r in self.rules], fallback=fallback)

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.counts.requested += 1
        try:
            choice = None if self.deny_all else await self._policy.decide(request)
        except asyncio.CancelledError:
            self.counts.denied += 1
            raise
        allowed = choice is not None and choice.kind in ("allow_once", "allow_always")
        if allowed:
            self.counts.approved += 1
        else:
            self.counts.denied += 1
        self._announce(request, allowed)
        return choice

    def _announce(self, request: acp.RequestPermissionRequest, allowed: bool) -> None:
        if self.report is None:
            return
        label = self._label(request.tool_call)
        if label is None and self.ask is not None:
            return  # the user answered: nothing to announce
        title = (
            request.tool_call.title if isinstance(request.tool_call.title, str) else "a tool call"
        )
        verb = "approved" if allowed else "rejected"
        self.report(
            Text(f"permission: {verb} {title!r} ({label or self.fallback_reason})", style="yellow")
        )

    def _label(self, tool_call: acp.ToolCallUpdate) -> str | None:
        if self.deny_all:
            return "--deny-all"
        return next((r.label for r in self.rules if r.rule.matches(tool_call)), None)


def build_rules(
    file_rules: list[Rule], file_name: str | None, allow_kinds: list[str], approve_all: bool
) -> list[LabelledRule]:
    rules = [
        LabelledRule(rule, f"rule {index} of {file_name}")
        for index, rule in enumerate(file_rules, 1)
    ]
    for kind in allow_kinds:
        rules.append(LabelledRule(Rule(decision="allow", kinds=(kind,)), f"--allow {kind}"))
    if approve_all:
        rules.append(LabelledRule(Rule(decision="allow"), "--approve-all"))
    return rules
