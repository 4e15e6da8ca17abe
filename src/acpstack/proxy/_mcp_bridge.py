"""MCP-over-ACP for agents that do not speak it (placeholder: filled in below)."""

from __future__ import annotations

from typing import Any

from msgspec import Raw, UnsetType


class McpBridge:
    def __init__(self, conductor: Any) -> None:
        self.conductor = conductor

    def takes_notification(self, target: Any, method: str, params: Raw | UnsetType) -> bool:
        return False

    def rewrite_session_params(self, method: str, params: Raw | UnsetType) -> Raw | UnsetType:
        return params

    async def aclose(self) -> None:
        return None
