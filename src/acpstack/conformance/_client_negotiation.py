"""`acpstack check client`: what the client did at version negotiation.

The checking agent speaks protocol version 1 only, so it answers `initialize` with 1
whatever the client asked for. It notes the version asked (an integer: the client's
latest), whether the `initialize` params have the shape of that version (v2's requires
`info`), and, when the client asked for 2 or more, that it went on in v1 as the answer
said (the v2 draft: the client must check that it supports the answered version, and
should disconnect if it does not; one connection speaks one version): v2-only methods
after an answer of 1 are a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acpstack.conformance._client_exercises import Finding
from acpstack.conformance._model import DOCS, Rule, Verdict
from acpstack.conformance._schema import MessageValidator

V1_SOURCE = f"{DOCS}/initialization#version-negotiation"
V2_SOURCE = f"{DOCS}/v2/initialization#version-negotiation"
#: Client-to-agent methods that exist in protocol v2 only.
V2_ONLY_METHODS = frozenset({"auth/login", "auth/logout", "tool_call/cancel", "terminal/cancel"})
VERSION_RULE = Rule(
    "The client sends the latest protocol version it supports in initialize "
    "(protocolVersion: an integer, 0 to 65535).",
    V1_SOURCE,
)
SHAPE_RULE = Rule(
    "initialize params follow the schema of the version asked for: v1's InitializeRequest, "
    "or from version 2 on v2's (which requires `info`).",
    f"{V1_SOURCE}; schema v2 $defs/InitializeRequest",
)
FALLBACK_RULE = Rule(
    "The client must check that it supports the version the agent answered, and should "
    "disconnect if it does not; after initialize one connection speaks exactly one version.",
    f"{V2_SOURCE}; schema v2 $defs/InitializeResponse.protocolVersion",
)


@dataclass
class Negotiation:
    """What the client asked for and did afterwards (filled in as its messages come)."""

    params: dict[str, Any] | None = None
    """The params of its (latest) `initialize`."""
    v2_methods: list[str] = field(default_factory=list)
    """v2-only methods it sent after the answer (which said 1)."""

    def initialize(self, params: dict[str, Any]) -> None:
        self.params = params
        self.v2_methods.clear()  # a repeated initialize starts over

    def request(self, method: str | None) -> None:
        if self.params is not None and method in V2_ONLY_METHODS:
            self.v2_methods.append(method)

    @property
    def asked(self) -> Any:
        return None if self.params is None else self.params.get("protocolVersion")

    @property
    def client_info(self) -> dict[str, Any]:
        """`clientInfo` (v1) or `info` (v2), whichever the client sent."""
        params = self.params or {}
        info = params.get("clientInfo", params.get("info"))
        return info if isinstance(info, dict) else {}

    @property
    def capabilities(self) -> dict[str, Any]:
        """`clientCapabilities` (v1); a v2 client's `capabilities` offer no fs or terminal."""
        caps = (self.params or {}).get("clientCapabilities")
        return caps if isinstance(caps, dict) else {}

    def findings(self, unstable: bool = False) -> list[Finding]:
        asked = self.asked
        if type(asked) is not int or not 0 <= asked <= 0xFFFF:
            message = f"initialize asked for protocolVersion {asked!r}, not a version number"
            return [Finding("negotiation.version", Verdict.FAIL, message, VERSION_RULE)]
        found = [
            Finding("negotiation.version", Verdict.PASS, f"asked for {asked}", VERSION_RULE),
            self._shape(asked, unstable),
        ]
        if asked == 1:
            message = "asked for 1, which this agent speaks: no fallback to check"
            found.append(Finding("negotiation.fallback", Verdict.SKIP, message, FALLBACK_RULE))
        elif self.v2_methods:
            message = (
                f"asked for {asked}, was answered 1, then sent v2-only "
                f"{', '.join(sorted(set(self.v2_methods)))}"
            )
            found.append(Finding("negotiation.fallback", Verdict.FAIL, message, FALLBACK_RULE))
        else:
            message = f"asked for {asked}, was answered 1, and went on in v1"
            found.append(Finding("negotiation.fallback", Verdict.PASS, message, FALLBACK_RULE))
        return found

    def _shape(self, asked: int, unstable: bool) -> Finding:
        version = min(asked, 2)
        validator = MessageValidator(unstable=unstable, version=version)
        problems = validator.validate_payload("InitializeRequest", self.params)
        if problems:
            shown = "; ".join(f"{path}: {text}" for path, text in problems[:5])
            message = f"not v{version}'s InitializeRequest: {shown}"
            return Finding("negotiation.initialize-shape", Verdict.FAIL, message, SHAPE_RULE)
        message = f"v{version}'s InitializeRequest"
        return Finding("negotiation.initialize-shape", Verdict.PASS, message, SHAPE_RULE)


__all__ = ["V2_ONLY_METHODS", "Negotiation"]
