"""MCP servers that live inside the client, offered to the agent over ACP (`mcp/message`).

`McpHost.add(name, server)` takes an official `mcp` SDK server object (`mcp.server.Server`
or `MCPServer`) and returns its declaration (`{"type": "acp", "name", "serverId"}`) to put
in a session's `mcpServers`. The server runs in this process on in-memory streams (the
SDK's own serving loop, in whichever era the agent opens with; MCP 2026-07-28 over ACP).
Each `mcp/message` request from the agent is handed to it as one MCP request and its
answer returned as `{"result"}` or `{"error"}`; its notifications for that request go back
as `mcp/message` notifications. Binding failures are outer errors: an unknown server
-33001, a duplicate active `requestId` -32602, a server that fails -33002 (also when it
answers with an error that names no request: every request waiting on it fails then).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpstack._tasks import cancel_and_wait
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from acpstack.client._client import AgentPeer
    from acpstack.schema import v1_unstable as acpu

log = logging.getLogger("acpstack.client")

SERVER_UNAVAILABLE = -33001
BACKEND_FAILED = -33002


@dataclass
class _Hosted:
    name: str
    server: Any
    write: Any = None  # the client side of the in-memory streams, once started
    task: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    pending: dict[int, tuple[str, asyncio.Future[Any]]] = field(default_factory=dict)


class McpHost:
    """The MCP servers one client offers over its ACP connection."""

    def __init__(self) -> None:
        self._servers: dict[str, _Hosted] = {}
        self._ids = itertools.count(1)
        self.agent: AgentPeer | None = None

    def add(self, name: str, server: Any, *, server_id: str | None = None) -> acpu.McpServerAcp:
        """Offer `server`; returns the declaration for `mcpServers` (unstable types)."""
        from acpstack.schema import v1_unstable as acpu

        server_id = server_id or f"{name}:{uuid.uuid4().hex}"
        if server_id in self._servers:
            raise ValueError(f"MCP server id {server_id!r} is already offered")
        self._servers[server_id] = _Hosted(name, server)
        return acpu.McpServerAcp(name=name, server_id=server_id)

    async def handle(self, params: acpu.MessageMcpRequest) -> acpu.MessageMcpResponse:
        from acpstack.schema import v1_unstable as acpu

        hosted = self._servers.get(params.server_id)
        if hosted is None:
            raise RequestError(
                SERVER_UNAVAILABLE,
                "MCP server registration unavailable",
                {"serverId": params.server_id},
            )
        if any(rid == params.request_id for rid, _ in hosted.pending.values()):
            raise RequestError.invalid_params(
                {"serverId": params.server_id, "requestId": params.request_id},
                "duplicate active MCP request ID",
            )
        await self._start(hosted)
        message = await self._exchange(hosted, params)
        if message.get("error") is not None:
            error = message["error"]
            return acpu.MessageMcpResponse(
                error=acpu.McpError(
                    code=int(error.get("code", BACKEND_FAILED)),
                    message=str(error.get("message", "")),
                    data=error.get("data"),
                )
            )
        return acpu.MessageMcpResponse(result=message.get("result"))

    async def _exchange(self, hosted: _Hosted, params: acpu.MessageMcpRequest) -> dict[str, Any]:
        import mcp_types
        from mcp.shared.message import SessionMessage

        inner_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        hosted.pending[inner_id] = (params.request_id, future)
        inner = params.params if isinstance(params.params, dict) else None
        request = mcp_types.JSONRPCRequest(
            jsonrpc="2.0", id=inner_id, method=params.method, params=inner
        )
        try:
            await hosted.write.send(SessionMessage(request))
            result: dict[str, Any] = await future
            return result
        except asyncio.CancelledError:  # the agent cancelled (`$/cancel_request`)
            cancel = mcp_types.JSONRPCNotification(
                jsonrpc="2.0",
                method="notifications/cancelled",
                params={"requestId": inner_id, "reason": "cancelled by the agent"},
            )
            with contextlib.suppress(Exception):
                hosted.write.send_nowait(SessionMessage(cancel))
            raise
        finally:
            hosted.pending.pop(inner_id, None)

    async def _start(self, hosted: _Hosted) -> None:
        if hosted.task is None:
            # Owner: this host; `aclose` ends it.
            hosted.task = asyncio.get_running_loop().create_task(self._run(hosted))
        await hosted.ready.wait()
        if hosted.write is None:
            raise RequestError(BACKEND_FAILED, "MCP server failed to start")

    async def _run(self, hosted: _Hosted) -> None:
        from mcp.client._memory import InMemoryTransport

        try:
            async with InMemoryTransport(hosted.server) as (read, write):
                hosted.write = write
                hosted.ready.set()
                async for item in read:
                    await self._from_server(hosted, item)
        except Exception:
            log.exception("MCP server %r stopped", hosted.name)
        finally:
            hosted.write = None
            hosted.ready.set()
            _fail_pending(hosted, RequestError(BACKEND_FAILED, "MCP server stopped"))

    async def _from_server(self, hosted: _Hosted, item: Any) -> None:
        import mcp_types

        message = getattr(item, "message", None)
        if isinstance(message, mcp_types.JSONRPCError) and message.id is None:
            # An error that names no request (the server could not read one) matches none of
            # ours: every request waiting on this server fails rather than waiting forever.
            error = {"code": message.error.code, "message": message.error.message}
            log.warning("MCP server %r answered an error for no request: %s", hosted.name, error)
            _fail_pending(
                hosted,
                RequestError(
                    BACKEND_FAILED,
                    "MCP server answered with an error that names no request",
                    {"serverId": self._server_id(hosted), "error": error},
                ),
            )
        elif isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            found = hosted.pending.get(message.id)  # type: ignore[arg-type]
            if found is not None and not found[1].done():
                found[1].set_result(message.model_dump(by_alias=True, exclude_none=True))
        elif isinstance(message, mcp_types.JSONRPCNotification):
            related = getattr(item.metadata, "related_request_id", None)
            found = hosted.pending.get(related) if related is not None else None
            if found is None or self.agent is None:
                return
            await self._notify(hosted, found[0], message)

    async def _notify(self, hosted: _Hosted, request_id: str, message: Any) -> None:
        from acpstack.schema import v1_unstable as acpu

        note = acpu.MessageMcpNotification(
            server_id=self._server_id(hosted), request_id=request_id, method=message.method
        )
        if message.params is not None:
            note.params = dict(message.params)
        assert self.agent is not None
        with contextlib.suppress(Exception):  # the connection may be closing
            await self.agent.mcp_message_notification(note)

    def _server_id(self, hosted: _Hosted) -> str:
        return next(k for k, v in self._servers.items() if v is hosted)

    async def aclose(self) -> None:
        for hosted in self._servers.values():
            if hosted.task is not None:  # the server's own task, started by `add`
                await cancel_and_wait(hosted.task)


def _fail_pending(hosted: _Hosted, error: RequestError) -> None:
    for _, future in hosted.pending.values():
        if not future.done():
            future.set_exception(error)
