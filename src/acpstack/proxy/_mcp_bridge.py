"""MCP-over-ACP for agents that do not speak it: proxies' MCP servers as stdio servers.

Proxies offer MCP servers as `{"type": "acp", "name", "serverId"}` in `mcpServers`, which
only an agent advertising `mcpCapabilities.acp` can use. For any other agent the conductor
replaces each one, in the session request it hands the agent, by a stdio server the agent
can start: `python -m acpstack.proxy._mcp_shim SOCKET TOKEN SERVER_ID`. The shim copies the
agent's MCP messages to the conductor over a Unix socket in a private directory (the
token, compared in constant time, keeps other local users' connections out); the
conductor turns each MCP request into an `mcp/message` request from the agent's place in
the chain, and the answer (the MCP result or error) back into the MCP response. The
provider's `mcp/message` notifications for an active request go to the shim that made it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
import uuid
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, Raw, UnsetType

from acpstack.proxy._link import Link, Message, loads, raw

if TYPE_CHECKING:
    from acpstack.proxy._conductor import Conductor

log = logging.getLogger("acpstack.proxy")

SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
LINE_LIMIT = 64 * 1024 * 1024


class McpBridge:
    """The conductor's end of the stdio shims (started on the first session that needs it)."""

    def __init__(self, conductor: Conductor) -> None:
        self.conductor = conductor
        self.token: str = secrets.token_hex(16)
        self._directory: str | None = None
        self._server: asyncio.Server | None = None
        self._starting: asyncio.Task[None] | None = None
        # (serverId, requestId) of each active request -> the shim's writer
        self._active: dict[tuple[str, str], asyncio.StreamWriter] = {}
        self._shims: set[asyncio.Task[None]] = set()

    @property
    def socket_path(self) -> str:
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="acpstack-mcp-")  # mode 0700
        return os.path.join(self._directory, "bridge.sock")

    # -- the session request the agent gets --------------------------------------------

    def rewrite_session_params(self, method: str, params: Raw | UnsetType) -> Raw | UnsetType:
        """`params` with acp MCP servers replaced by shims, when the agent needs them."""
        if method not in SESSION_OPENERS or self.conductor.agent_speaks_acp_mcp:
            return params
        body = loads(params)
        servers = body.get("mcpServers") if isinstance(body, dict) else None
        if not isinstance(servers, list) or not any(_is_acp(s) for s in servers):
            return params
        assert isinstance(body, dict)
        body["mcpServers"] = [self._shim(s) if _is_acp(s) else s for s in servers]
        self._start()
        return raw(body)

    def _shim(self, server: dict[str, Any]) -> dict[str, Any]:
        args = ["-m", "acpstack.proxy._mcp_shim", self.socket_path, self.token, server["serverId"]]
        return {"name": server["name"], "command": sys.executable, "args": args, "env": []}

    def _start(self) -> None:
        if self._starting is not None:
            return
        # Listening before the agent gets the session request: a shim that connects at
        # once waits in the backlog until the server below takes it.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(64)
        self._starting = asyncio.get_running_loop().create_task(self._listen(listener))

    async def _listen(self, listener: socket.socket) -> None:
        self._server = await asyncio.start_unix_server(
            self._serve_shim, sock=listener, limit=LINE_LIMIT
        )

    # -- one shim ------------------------------------------------------------------------

    async def _serve_shim(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._shims.add(task)
        try:
            hello = json.loads(await reader.readline() or b"{}")
            token, server_id = hello.get("token", ""), hello.get("serverId")
            if not hmac.compare_digest(str(token), self.token) or not isinstance(server_id, str):
                log.warning("MCP bridge: refused a connection with a wrong token")
                return
            while line := await reader.readline():
                self._from_agent(server_id, line, writer)
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            log.info("MCP bridge: a shim left: %s", exc)
        finally:
            writer.close()
            if task is not None:
                self._shims.discard(task)

    def _from_agent(self, server_id: str, line: bytes, writer: asyncio.StreamWriter) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "method" not in message:
            return
        if "id" not in message:
            return  # MCP consumers' notifications have no ACP counterpart: dropped
        mcp_id, request_id = message["id"], uuid.uuid4().hex
        params: dict[str, Any] = {
            "serverId": server_id,
            "requestId": request_id,
            "method": message["method"],
        }
        if message.get("params") is not None:
            params["params"] = message["params"]
        key = (server_id, request_id)
        self._active[key] = writer

        def answered(reply: Message) -> None:
            self._active.pop(key, None)
            _write(writer, _mcp_answer(mcp_id, reply))

        conductor = self.conductor
        link, method, wrap = conductor._at(conductor.depth - 1, False, "mcp/message")
        if wrap:
            link.request(conductor.successor_name, _wrapped(method, raw(params)), answered)
        else:
            link.request(method, raw(params), answered)

    # -- notifications from the provider ----------------------------------------------------

    def takes_notification(self, target: Link, method: str, params: Raw | UnsetType) -> bool:
        """Whether an `mcp/message` notification headed for the agent belongs to a shim
        (it is then written to that shim instead)."""
        if method != "mcp/message" or not self._active:
            return False
        body = loads(params)
        if not isinstance(body, dict):
            return False
        writer = self._active.get((str(body.get("serverId")), str(body.get("requestId"))))
        if writer is None:
            return False
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": body.get("method")}
        if body.get("params") is not None:
            note["params"] = body["params"]
        _write(writer, note)
        return True

    async def aclose(self) -> None:
        if self._starting is not None:
            with contextlib.suppress(Exception):
                await self._starting
        if self._server is not None:
            self._server.close()
        for task in list(self._shims):
            task.cancel()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


def _is_acp(server: Any) -> bool:
    return isinstance(server, dict) and server.get("type") == "acp" and "serverId" in server


def _wrapped(method: str, params: Raw) -> Raw:
    return raw({"method": method, "params": params})


def _mcp_answer(mcp_id: Any, reply: Message) -> dict[str, Any]:
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": mcp_id}
    if reply.error is not UNSET:  # a binding or chain failure: an MCP error all the same
        failure = loads(reply.error)
        answer["error"] = (
            failure if isinstance(failure, dict) else {"code": -32603, "message": "error"}
        )
        return answer
    outcome = loads(reply.result)
    if isinstance(outcome, dict) and "result" in outcome:
        answer["result"] = outcome["result"]
    elif isinstance(outcome, dict) and isinstance(outcome.get("error"), dict):
        answer["error"] = outcome["error"]
    else:
        answer["error"] = {"code": -32603, "message": "mcp/message answered without an outcome"}
    return answer


def _write(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    if not writer.is_closing():
        writer.write(json.dumps(message).encode() + b"\n")
