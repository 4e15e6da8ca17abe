"""Elicitation policies: how a `ClientRuntime` answers `elicitation/create`.

Like permissions, nothing is ever accepted without the user: `AskElicitation` asks (a UI
shows the form or the URL and returns what the user chose), `ElicitationRules` can only
decline or cancel before asking (a rule's "accept" is not obeyed, checked when it runs),
and `DeclineElicitations` (the default without a policy) declines everything. The runtime
advertises `elicitation.form` / `elicitation.url` only when a policy that asks is
configured.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.client")


@dataclass(frozen=True)
class ElicitationReply:
    """The user's answer: `accept` (with `content` for a form), `decline` or `cancel`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] = field(default_factory=dict)


ElicitationAsk = Callable[[acp.CreateElicitationRequest], Awaitable[ElicitationReply]]


class ElicitationPolicy(Protocol):
    """How a `ClientRuntime` answers `elicitation/create`: implement `decide`, and set
    `asks_user` (with `modes`, "form" and/or "url", when it asks)."""

    asks_user: bool  # False: nothing is advertised (the agent must not elicit)

    async def decide(self, request: acp.CreateElicitationRequest) -> ElicitationReply:
        """The user's answer to the request (a policy that does not ask declines)."""
        ...


class DeclineElicitations:
    """Declines every elicitation (nothing advertised, so a well-behaved agent never asks)."""

    asks_user = False

    async def decide(self, request: acp.CreateElicitationRequest) -> ElicitationReply:
        """Decline."""
        return ElicitationReply("decline")


class AskElicitation:
    """Asks the user through `ask` (form: the values they entered; URL: whether they agreed
    to open it). `modes` limits what is advertised."""

    asks_user = True

    def __init__(self, ask: ElicitationAsk, modes: Sequence[str] = ("form", "url")) -> None:
        self.ask = ask
        self.modes: tuple[str, ...] = tuple(modes)

    async def decide(self, request: acp.CreateElicitationRequest) -> ElicitationReply:
        """What `ask` returns for the request."""
        return await self.ask(request)


ElicitationRule = Callable[[acp.CreateElicitationRequest], 'Literal["decline", "cancel"] | None']


class ElicitationRules:
    """Rules run first and may decline or cancel, or return None to leave the request to
    `then` (the user, or a decline). They never accept, and this is enforced when they run:
    any other verdict ("accept" included) is logged as a warning and counts as None."""

    def __init__(
        self, rules: Sequence[ElicitationRule], then: ElicitationPolicy | None = None
    ) -> None:
        self.rules: list[ElicitationRule] = list(rules)
        self.then: ElicitationPolicy = then or DeclineElicitations()
        self.asks_user: bool = self.then.asks_user
        self.modes: tuple[str, ...] = tuple(getattr(self.then, "modes", ("form", "url")))

    async def decide(self, request: acp.CreateElicitationRequest) -> ElicitationReply:
        """The first rule's "decline" or "cancel", else what `then` decides (the user's
        answer, or a decline when `then` does not ask). A rule that would accept is not
        obeyed: a warning is logged and the next rules, then `then`, decide."""
        for rule in self.rules:
            verdict = rule(request)
            if verdict is None:
                continue
            if verdict in ("decline", "cancel"):
                return ElicitationReply(verdict)
            log.warning(
                "elicitation rule %s returned %r: rules may only decline or cancel, so the "
                "request goes on to %s",
                getattr(rule, "__qualname__", repr(rule)),
                verdict,
                "the user" if self.then.asks_user else "be declined (no policy asks the user)",
            )
        return await self.then.decide(request)


def check_form_answer(
    request: acp.CreateElicitationRequest, reply: ElicitationReply
) -> dict[str, Any]:
    """An accepted form answer limited to the requested fields; ValueError naming a
    required field that has no value."""
    schema = request.requested_schema
    properties = schema.properties if isinstance(schema, acp.ElicitationSchema) else None
    names = set(properties) if isinstance(properties, dict) else set(reply.content)
    content = {k: v for k, v in reply.content.items() if k in names}
    required = schema.required if isinstance(schema, acp.ElicitationSchema) else None
    for name in required if isinstance(required, list) else []:
        if name not in content:
            raise ValueError(f"the form answer has no value for required field {name!r}")
    return content
