"""The interface between the reference agent and what produces its answers."""

from __future__ import annotations

from typing import Protocol

from acpstack.agent import Turn


class Brain(Protocol):
    """Answers one prompt turn using the Turn helpers. Returns the ACP stop reason."""

    async def respond(self, turn: Turn) -> str: ...
