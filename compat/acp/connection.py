"""`acp.connection.Connection`: a plain JSON-RPC connection with one handler function.

`handler(method, params, is_notification)` answers every request and notification; the
frames, ordering, limits and cancellation are acpstack's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from acp._bridge import Link, plain_dispatcher
from acp.core import _transport

__all__ = ["Connection", "MethodHandler"]

MethodHandler = Callable[[str, Any, bool], Awaitable[Any]]


class Connection:
    def __init__(
        self,
        handler: MethodHandler,
        writer: Any,
        reader: Any = None,
        *,
        listening: bool = True,
        role: str = "client",
        **_: Any,
    ) -> None:
        self._link = Link(
            role, None, _transport(writer, reader), dispatcher=plain_dispatcher(handler)
        )
        self._link.state.any_method = True  # plain JSON-RPC: any method name goes

    @property
    def _pending(self) -> dict[Any, Any]:
        """The requests sent and not answered yet, by id."""
        return self._link.state.pending

    async def send_request(self, method: str, params: Any = None) -> Any:
        return await self._link.raw_request(method, params)

    async def send_notification(self, method: str, params: Any = None) -> None:
        await self._link.raw_notify(method, params)

    async def main_loop(self) -> None:
        await self._link.wait_closed()

    async def close(self) -> None:
        await self._link.close()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
