"""What failover is asked to do (`Failover`), what it reports (`FailoverEvent`), and how
an application tells a request lost in a broken connection (`is_connection_lost`); the
machinery is `_failover.py`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from acpstack.transports import CONNECTION_LOST

SESSION_BUSY_REASON = "session_busy"  # data.reason of SESSION_BUSY (agent/_leases.py)


@dataclass
class FailoverEvent:
    """What happened: "lost" (the connection broke), "reattached" (one session is back: what
    the client writes for it goes out again, while other sessions may still be reattaching),
    "reconnected" (every session that could be is back) or "failed" (gave up)."""

    kind: Literal["lost", "reattached", "reconnected", "failed"]
    reason: str
    lost_requests: list[str] = field(default_factory=list)  # methods failed as lost
    sessions: list[str] = field(default_factory=list)  # reattached
    missing: dict[str, str] = field(default_factory=dict)  # not reattached: id -> why
    attempt: int = 0

    def __str__(self) -> str:
        if self.kind == "lost":
            lost = (
                f"; lost in flight: {', '.join(self.lost_requests)}" if self.lost_requests else ""
            )
            return f"the connection to the agent broke ({self.reason}){lost}; reconnecting"
        if self.kind == "reattached":
            return f"session {', '.join(self.sessions)} reattached"
        if self.kind == "failed":
            return f"could not reconnect to the agent: {self.reason}"
        text = f"reconnected to the agent; {len(self.sessions)} session(s) reattached"
        for session_id, why in self.missing.items():
            text += f"; session {session_id} not reattached: {why}"
        return text


@dataclass
class Failover:
    """How to fail over (`connect_http(..., reconnect=Failover(...))`; `True` = defaults)."""

    attempts: int = 10  # connections tried after each break
    first_delay: float = 0.1  # seconds between attempts, doubling up to max_delay
    max_delay: float = 2.0
    busy_timeout: float = 30.0  # how long to keep asking for a session held elsewhere
    request_timeout: float = 30.0  # for initialize and each reattach
    on_event: Callable[[FailoverEvent], None] | None = None


def is_connection_lost(error: Any) -> bool:
    """True for the error a request gets when the connection broke while it was in flight."""
    data = getattr(error, "data", None)
    return isinstance(data, dict) and data.get("reason") == CONNECTION_LOST
