"""Connections to the MCP servers a client passes in `session/new` / `load` / `resume`.

stdio, http and sse servers, and (on unstable connections) servers the client itself
provides over ACP (`{"type": "acp"}`, see `_mcp_acp.py`; spoken in MCP 2026-07-28, so the
session starts with `server/discover` instead of the `initialize` handshake).

Built on the official `mcp` SDK (the `acpstack[mcp]` extra, imported lazily). Each server
gets one owner task: the SDK's transports are anyio context managers that must be entered
and left in the same task, so the owner enters them, reports ready (or the error), and
leaves them when asked to stop. Calls go through the session object from any task.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpstack._tasks import cancel_and_wait, wait_ended
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.agent._mcp_acp import AcpMcpTransport
    from acpstack.schema import v1_unstable as acpu

log = logging.getLogger("acpstack.mcp")

McpServerConfig = acp.McpServerStdio | acp.McpServerHttp | acp.McpServerSse
# A tool call's progress: (progress, total or None, message or None), as MCP reports it.
ProgressCallback = Callable[[float, "float | None", "str | None"], Awaitable[None]]


class McpUnavailable(ImportError):
    """The `mcp` package is not installed."""


class McpServerError(Exception):
    """An MCP server failed to start or to answer at the transport level."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        self.message = message


@dataclass
class McpTool:
    """One tool of an MCP server, as `McpConnections.list_tools` lists it (`input_schema`:
    the JSON Schema of its arguments)."""

    server: str
    name: str
    description: str | None
    input_schema: dict[str, Any]
    title: str | None = None
    read_only: bool = False  # the server's `readOnlyHint` annotation (a hint, not a guarantee)


@dataclass
class McpToolResult:
    """What a tool call answered: MCP content items as JSON (`text` joins the text
    ones), whether the tool reported an error, and its structured content if any."""

    content: list[dict[str, Any]]
    is_error: bool
    structured: Any = None

    @property
    def text(self) -> str:
        """The text of the result's text items, one per line."""
        return "\n".join(
            str(item.get("text", "")) for item in self.content if item.get("type") == "text"
        )


def _require_mcp() -> Any:
    try:
        import mcp
    except ImportError as exc:
        raise McpUnavailable(
            'MCP support needs the `mcp` package: in the acpstack checkout, pip install ".[mcp]" '
            '(or pip install "mcp>=2,<3")'
        ) from exc
    return mcp


async def _import_mcp(servers: Sequence[McpServerConfig]) -> None:
    """Import the SDK modules these servers need in a worker thread: the first import costs
    seconds of CPU, which on the event loop would hold up every other request meanwhile."""
    names = ["mcp", "mcp.client.session"]
    names += [_TRANSPORT_MODULES[type(c)] for c in servers if type(c) in _TRANSPORT_MODULES]
    missing = [name for name in names if name not in sys.modules]
    if not missing:
        return
    try:
        await asyncio.to_thread(lambda: [importlib.import_module(name) for name in missing])
    except ImportError:
        _require_mcp()  # raises the friendly McpUnavailable when `mcp` itself is missing
        raise


_TRANSPORT_MODULES: dict[type, str] = {
    acp.McpServerStdio: "mcp.client.stdio",
    acp.McpServerHttp: "mcp.client.streamable_http",
    acp.McpServerSse: "mcp.client.sse",
}


@dataclass
class _Server:
    name: str
    config: McpServerConfig
    ready: asyncio.Future[None]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    session: Any = None
    tools: list[McpTool] | None = None


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


class McpConnections:
    """The MCP servers of one session: start them, list and call their tools, stop them."""

    def __init__(
        self,
        *,
        allow_http: bool = False,
        allow_sse: bool = False,
        connect_timeout: float = 30.0,
        acp_client: ClientPeer | None = None,
    ) -> None:
        self.acp_client = acp_client  # set: servers the client offers over ACP are allowed
        self._acp: list[AcpMcpTransport] = []
        self.allow_http = allow_http
        self.allow_sse = allow_sse
        self.connect_timeout = connect_timeout
        self._servers: dict[str, _Server] = {}
        self.errors: dict[str, McpServerError] = {}
        self._closed = False

    async def __aenter__(self) -> McpConnections:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(
        self, servers: Sequence[McpServerConfig], *, fail_fast: bool = False
    ) -> dict[str, McpServerError | None]:
        """Connect to every server in parallel; a failure is reported for that server only."""
        await _import_mcp(servers)
        loop = asyncio.get_running_loop()
        started: list[_Server] = []
        for config in servers:
            server = _Server(config.name, config, loop.create_future())
            # Read here too: a start abandoned by its caller (the session/new was cancelled,
            # the connection ended) must not log "exception was never retrieved".
            server.ready.add_done_callback(_retrieve)
            self._servers[config.name] = server
            # Owner: these connections; `_stop` / `aclose` end it.
            server.task = loop.create_task(self._own(server), name=f"mcp-{config.name}")
            started.append(server)
        results: dict[str, McpServerError | None] = {}
        for server in started:
            try:
                await asyncio.wait_for(asyncio.shield(server.ready), self.connect_timeout)
                results[server.name] = None
            except McpServerError as exc:
                results[server.name] = exc
            except TimeoutError:
                results[server.name] = McpServerError(
                    server.name, f"did not start within {self.connect_timeout} s"
                )
                await self._stop(server)
            error = results[server.name]
            if error is not None:
                self.errors[server.name] = error
                self._servers.pop(server.name, None)
        if fail_fast:
            first = next((e for e in results.values() if e is not None), None)
            if first is not None:
                await self.aclose()
                raise first
        return results

    async def _own(self, server: _Server) -> None:
        mcp = _require_mcp()
        from mcp.client.session import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(server.config))
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        client_info=mcp.types.Implementation(name="acpstack", version="0"),
                    )
                )
                if _is_acp(server.config):
                    await session.discover()
                else:
                    await session.initialize()
                server.session = session
                server.ready.set_result(None)
                await server.stop.wait()
        except asyncio.CancelledError:
            if not server.ready.done():
                server.ready.set_exception(McpServerError(server.name, "stopped while starting"))
            raise
        except Exception as exc:  # anyio wraps failures in (Exception) groups
            message = _describe(exc)
            if not server.ready.done():
                server.ready.set_exception(
                    McpServerError(server.name, f"failed to start: {message}")
                )
            else:
                log.warning("MCP server %r stopped: %s", server.name, message)
        finally:
            server.session = None

    def _transport(self, config: McpServerConfig) -> Any:
        if _is_acp(config):
            if self.acp_client is None:
                raise McpServerError(
                    config.name, "acp MCP servers need a connection with unstable features on"
                )
            from acpstack.agent._mcp_acp import AcpMcpTransport

            transport = AcpMcpTransport(self.acp_client, getattr(config, "server_id"))  # noqa: B009
            self._acp.append(transport)
            return transport.streams()
        if isinstance(config, acp.McpServerStdio):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            if not _which(config.command):
                raise McpServerError(config.name, f"command not found: {config.command}")
            env = {"PATH": os.environ.get("PATH", os.defpath)}
            env.update({v.name: v.value for v in config.env})
            return stdio_client(
                StdioServerParameters(command=config.command, args=list(config.args), env=env)
            )
        if isinstance(config, acp.McpServerHttp):
            if not self.allow_http:
                raise McpServerError(config.name, "http MCP servers are not enabled for this agent")
            from mcp.client.streamable_http import streamable_http_client

            headers = {h.name: h.value for h in config.headers}
            if headers:
                return _streamable_http_with_headers(config.url, headers)
            return streamable_http_client(config.url)
        if isinstance(config, acp.McpServerSse):
            if not self.allow_sse:
                raise McpServerError(config.name, "sse MCP servers are not enabled for this agent")
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers={h.name: h.value for h in config.headers})
        raise McpServerError(
            getattr(config, "name", "?"), f"unsupported MCP server type {type(config).__name__}"
        )

    def deliver_acp_notification(self, params: acpu.MessageMcpNotification) -> bool:
        """Route a client's `mcp/message` notification to the request it belongs to."""
        return any(transport.deliver(params) for transport in self._acp)

    def _server(self, name: str) -> _Server:
        if self._closed:
            raise McpServerError(name, "the MCP connections are closed")
        server = self._servers.get(name)
        if server is None or server.session is None:
            reason = self.errors.get(name)
            raise McpServerError(
                name, f"not connected ({reason.message})" if reason else "not connected"
            )
        return server

    @property
    def connected(self) -> list[str]:
        """The names of the servers that are connected."""
        return [name for name, s in self._servers.items() if s.session is not None]

    @property
    def configs(self) -> list[McpServerConfig]:
        """The configurations of the connected servers (e.g. to know their secrets)."""
        return [s.config for s in self._servers.values() if s.session is not None]

    async def list_tools(self, *, refresh: bool = False) -> list[McpTool]:
        """The tools of every connected server; a server that fails to list them is left
        out and its error recorded in `errors`."""
        tools: list[McpTool] = []
        for name in self.connected:
            server = self._servers[name]
            if server.tools is None or refresh:
                try:
                    result = await server.session.list_tools()
                except Exception as exc:
                    self.errors[name] = McpServerError(
                        name, f"listing its tools failed: {_describe(exc)}"
                    )
                    log.warning("MCP server %r: listing its tools failed: %s", name, _describe(exc))
                    continue
                server.tools = [_tool(name, t) for t in result.tools]
            tools.extend(server.tools)
        return tools

    async def call_tool(
        self,
        server: str,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> McpToolResult:
        """Call tool `name` of `server`; `McpServerError` when the server is unknown or
        not connected, the call fails at the transport level, or `timeout` passes (a
        tool's own error is a result with `is_error`). `on_progress(progress, total,
        message)` is awaited for each progress notification the server sends for the call
        (the SDK asks for them with a progress token; over ACP they come as `mcp/message`
        notifications)."""
        session = self._server(server).session
        call = session.call_tool(name, arguments or {}, progress_callback=on_progress)
        try:
            result = await asyncio.wait_for(call, timeout)
        except TimeoutError:
            raise McpServerError(
                server, f"tool {name!r} did not answer within {timeout} s"
            ) from None
        except McpServerError:
            raise
        except Exception as exc:
            raise McpServerError(server, f"tool {name!r} failed: {_describe(exc)}") from None
        content = [
            item.model_dump(mode="json", by_alias=True, exclude_none=True)
            for item in result.content
        ]
        structured = getattr(result, "structured_content", None) or getattr(
            result, "structuredContent", None
        )
        is_error = bool(getattr(result, "is_error", None) or getattr(result, "isError", False))
        return McpToolResult(content=content, is_error=is_error, structured=structured)

    async def _stop(self, server: _Server) -> None:
        server.stop.set()
        task = server.task
        if task is None or task.done():
            return
        try:
            await wait_ended(task, timeout=10)  # it leaves its transports itself when it can
        finally:
            await cancel_and_wait(task)  # returns at once when it ended

    async def aclose(self) -> None:
        """Stop every server (their processes are gone afterwards). Idempotent."""
        self._closed = True
        servers = list(self._servers.values())
        await asyncio.gather(*(self._stop(s) for s in servers), return_exceptions=True)
        self._servers.clear()


@contextlib.asynccontextmanager
async def _streamable_http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport on an HTTP client that sends `headers` (closed after)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's own client's timeouts: a server may hold a response stream open for minutes.
    async with httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)
    ) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def _tool(server: str, tool: Any) -> McpTool:
    schema = tool.input_schema if hasattr(tool, "input_schema") else tool.inputSchema
    annotations = getattr(tool, "annotations", None)
    title = getattr(tool, "title", None) or getattr(annotations, "title", None)
    read_only = getattr(annotations, "read_only_hint", None) or getattr(
        annotations, "readOnlyHint", None
    )
    return McpTool(
        server,
        tool.name,
        tool.description,
        dict(schema or {}),
        title=title,
        read_only=read_only is True,
    )


def _is_acp(config: Any) -> bool:
    return type(config).__name__ == "McpServerAcp"  # (an unstable type, not loaded otherwise)


def _which(command: str) -> bool:
    import shutil

    return shutil.which(command) is not None


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpServerError):
        return exc.message
    return str(exc) or type(exc).__name__
