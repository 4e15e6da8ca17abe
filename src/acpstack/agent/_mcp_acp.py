"""An MCP client transport that rides on ACP: MCP servers a client offers with
`{"type": "acp", "name", "serverId"}` in `mcpServers` (unstable MCP-over-ACP).

The official `mcp` SDK's `ClientSession` runs over this transport exactly as over stdio or
HTTP. Each MCP request it writes becomes one ACP `mcp/message` request to the client
(`serverId`, a fresh `requestId`, the MCP method and params); the answer carries the MCP
result or the MCP error. The client's `mcp/message` notifications for an active request
(progress, ...) are handed back to the session. MCP 2026-07-28 has no other notifications
from the consumer and no requests from the server: a `notifications/cancelled` cancels the
outer ACP request (`$/cancel_request` on this hop), anything else is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from acpstack._tasks import cancel_and_wait
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.schema import v1_unstable as acpu

log = logging.getLogger("acpstack.mcp")


class AcpMcpTransport:
    """One ACP-provided MCP server, as a pair of MCP message streams."""

    def __init__(self, client: ClientPeer, server_id: str, *, timeout: float | None = None):
        self.client = client
        self.server_id = server_id
        self.timeout = timeout
        self._calls: dict[Any, tuple[str, asyncio.Task[None]]] = {}  # MCP id -> (requestId, call)
        self._to_session: Any = None

    def deliver(self, params: acpu.MessageMcpNotification) -> bool:
        """A client notification for one of our active requests: pass it to the session."""
        if params.server_id != self.server_id or self._to_session is None:
            return False
        if not any(rid == params.request_id for rid, _ in self._calls.values()):
            return False
        import mcp_types
        from mcp.shared.message import SessionMessage

        inner = params.params if isinstance(params.params, dict) else None
        note = mcp_types.JSONRPCNotification(jsonrpc="2.0", method=params.method, params=inner)
        with contextlib.suppress(Exception):  # a full or closed stream: the note is dropped
            self._to_session.send_nowait(SessionMessage(note))
        return True

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        from mcp.shared.message import SessionMessage

        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            256
        )
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](256)
        self._to_session = to_session
        # Owner: this `streams()` context, which ends it on the way out (as its calls).
        pump = asyncio.get_running_loop().create_task(self._pump(from_session))
        try:
            async with to_session, session_reads, session_writes, from_session:
                yield session_reads, session_writes
        finally:
            self._to_session = None
            for _, call in list(self._calls.values()):
                call.cancel()
            await cancel_and_wait(pump)

    async def _pump(self, from_session: Any) -> None:
        import mcp_types

        async for item in from_session:
            message = item.message
            if isinstance(message, mcp_types.JSONRPCRequest):
                request_id = uuid.uuid4().hex
                task = asyncio.get_running_loop().create_task(self._call(message, request_id))
                self._calls[message.id] = (request_id, task)
                task.add_done_callback(functools.partial(self._forget, message.id))
            elif (
                isinstance(message, mcp_types.JSONRPCNotification)
                and message.method == "notifications/cancelled"
            ):
                target = (message.params or {}).get("requestId")
                found = self._calls.get(target)
                if found is not None:
                    found[1].cancel()
            else:
                log.debug("MCP over ACP: dropped %s", type(message).__name__)

    def _forget(self, mcp_id: Any, _task: asyncio.Task[None]) -> None:
        self._calls.pop(mcp_id, None)

    async def _call(self, message: Any, request_id: str) -> None:
        import mcp_types
        from mcp.shared.message import SessionMessage

        from acpstack.schema import v1_unstable as acpu

        params = acpu.MessageMcpRequest(
            server_id=self.server_id, request_id=request_id, method=message.method
        )
        if message.params is not None:
            params.params = dict(message.params)
        reply: Any
        try:
            outcome = await self.client.mcp_message(params, timeout=self.timeout)
        except RequestError as err:  # a binding or runtime failure, not an MCP error
            error = mcp_types.ErrorData(code=err.code, message=err.message, data=err.data)
            reply = mcp_types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        else:
            reply = _reply(message.id, outcome)
        if self._to_session is not None:
            with contextlib.suppress(Exception):
                await self._to_session.send(SessionMessage(reply))


def _reply(mcp_id: Any, outcome: Any) -> Any:
    """The MCP JSON-RPC answer for an `mcp/message` response (`result` wins over `error`)."""
    import mcp_types
    from msgspec import UNSET

    if outcome.result is not UNSET:
        result = outcome.result if isinstance(outcome.result, dict) else {}
        return mcp_types.JSONRPCResponse(jsonrpc="2.0", id=mcp_id, result=result)
    error = outcome.error
    data = getattr(error, "data", UNSET)
    return mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=mcp_id,
        error=mcp_types.ErrorData(
            code=error.code, message=error.message, data=None if data is UNSET else data
        ),
    )
