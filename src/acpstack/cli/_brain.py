"""The interface between the reference agent and what produces its answers."""

from __future__ import annotations

from typing import Protocol

from acpstack.agent import Turn
from acpstack.schema import v1 as acp


class Brain(Protocol):
    """Answers one prompt turn using the Turn helpers. Returns the ACP stop reason."""

    async def respond(self, turn: Turn) -> acp.StopReason: ...
