"""`Proxy`: a component of a proxy chain; subclass it and override only what you change.

A proxy sits between its predecessor (towards the client) and its successor (towards the
agent), both reached through its conductor: what goes down leaves wrapped in
`proxy/successor`, what goes up leaves plain. Every message a subclass does not hook is
forwarded as it came, params untouched (never decoded). The hooks:

- `prompt(params)`: a `session/prompt` on its way to the agent; return the params to send;
- `update(params)`: a `session/update` on its way to the client; return None to drop it;
- `permission(params, ask)`: a permission request; `await ask(params)` asks upstream;
- `client_request(method, params, forward)`: any other request the agent makes of the
  client (files, terminals, ...); `await forward(params)` sends it on;
- `agent_request(method, params, forward)`: any other request towards the agent;
- methods marked `@tool`: an MCP server the proxy offers the agent over `mcp/message`
  (added to `mcpServers` of every new, loaded or resumed session).

A hook that raises `RequestError` answers with that error; another exception becomes an
internal error whose details go to the log only.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from msgspec import UNSET, Raw, UnsetType

from acpstack.proxy._link import (
    Link,
    Message,
    RequestId,
    envelope,
    error,
    loads,
    raw,
    unwrap,
)
from acpstack.transports import Transport
from acpstack.wire import RequestError

log = logging.getLogger("acpstack.proxy")

INITIALIZE = frozenset({"proxy/initialize", "_proxy/initialize"})
# `_proxy/successor/request` and `/notification`: the spelling of @thinkwell/conductor,
# which initializes a proxy with `initialize` carrying `_meta.proxy: true` instead.
SUCCESSOR = frozenset(
    {
        "proxy/successor",
        "_proxy/successor",
        "_proxy/successor/request",
        "_proxy/successor/notification",
    }
)
SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
Forward = Callable[[Any], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Any])
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def tool(function: F) -> F:
    """Mark a proxy method as an MCP tool; its docstring describes it, its annotated
    parameters (str, int, float, bool) are the tool's arguments."""
    function.__acpstack_tool__ = True  # type: ignore[attr-defined]
    return function


class Proxy:
    """A proxy component. `name` names its MCP server (when it has tools). Run it with
    `run()` on stdio, as its conductor starts it."""

    name = "proxy"

    def __init__(self) -> None:
        self.successor_method: str = "proxy/successor"  # for requests; notifications:
        self.successor_notification: str = "proxy/successor"
        self.server_id: str = f"{self.name}-{uuid.uuid4().hex[:12]}"
        self.tools: dict[str, Callable[..., Any]] = {
            name: getattr(self, name)
            for name in dir(type(self))
            if getattr(getattr(type(self), name), "__acpstack_tool__", False)
        }
        self._link: Link | None = None
        self._tasks: dict[RequestId, asyncio.Task[None]] = {}
        self._relayed: dict[RequestId, tuple[Link, RequestId]] = {}
        self._steps: deque[Callable[[], Awaitable[None] | None]] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()

    # -- the hooks (defaults forward unchanged) -------------------------------------------

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        """A `session/prompt`'s params on their way to the agent: return those to send."""
        return params

    async def update(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """A `session/update`'s params on their way to the client: return those to send,
        or None to drop the update. Updates leave in the order they came."""
        return params

    async def permission(self, params: dict[str, Any], ask: Forward) -> Any:
        """The agent's `session/request_permission`: `await ask(params)` asks the client
        and returns its answer; return the answer the agent gets."""
        return await ask(params)

    async def client_request(self, method: str, params: Any, forward: Forward) -> Any:
        """Any other request of the agent to the client (`fs/*`, `terminal/*`, ...):
        `await forward(params)` sends it on and returns the client's result."""
        return await forward(params)

    async def agent_request(self, method: str, params: Any, forward: Forward) -> Any:
        """Any request towards the agent but `session/prompt` (and, with tools, the
        session openers): `await forward(params)` sends it on and returns the result."""
        return await forward(params)

    def _overrides(self, hook: str) -> bool:
        return getattr(type(self), hook) is not getattr(Proxy, hook)

    def passes_through(self, method: str, *, down: bool, request: bool) -> bool:
        """Whether this proxy would send a `method` message (heading `down` to the agent or
        up to the client) on at once, unchanged, as it came: then the conductor of an
        in-process proxy routes it past the proxy instead of waking it. The handshake and
        the envelopes always reach it; a subclass that changes the routing itself (not only
        the hooks) is never passed by."""
        if self._routes_itself() or method in _ALWAYS_SEEN:
            return False
        if down:
            if not request:
                return True  # notifications to the agent are forwarded as they come
            if method == "session/prompt" and self._overrides("prompt"):
                return False
            if method in SESSION_OPENERS and self.tools:
                return False  # it adds its MCP server to the session
            # The answer comes back the way the request went, and it must not overtake
            # the updates an `update` hook is still working on.
            return not self._overrides("agent_request") and not self._overrides("update")
        if not request:
            # With an `update` hook every notification up waits its turn behind updates.
            return not self._overrides("update")
        if method == "mcp/message":
            return not self.tools
        if method == "session/request_permission":
            return not self._overrides("permission")
        return not self._overrides("client_request")

    def _routes_itself(self) -> bool:
        return any(self._overrides(name) for name in _ROUTING)

    # -- running --------------------------------------------------------------------------

    def run(self) -> None:
        """Serve on this process's stdin/stdout until the conductor closes them."""
        from acpstack.rpc import run
        from acpstack.transports import open_stdio_transport

        logging.basicConfig(level=os.environ.get("ACPSTACK_LOG", "WARNING").upper())

        async def main() -> None:
            await self.serve(await open_stdio_transport())

        run(main())

    async def serve(self, transport: Transport) -> None:
        """Serve the conductor on `transport` until it closes."""
        self._link = Link(transport, "the conductor", self)
        self._link.start()
        try:
            await self._closed.wait()
        finally:
            for task in [*self._tasks.values(), *([self._worker] if self._worker else [])]:
                task.cancel()
            await transport.close()

    def on_closed(self, link: Link, reason: str) -> None:
        self._closed.set()

    # -- sending both ways ------------------------------------------------------------------

    def _down(self, method: str, params: Raw | UnsetType) -> tuple[str, Raw]:
        """A request's method and params, wrapped for the successor."""
        inner: dict[str, Any] = {"method": method}
        if params is not UNSET:
            inner["params"] = params
        return self.successor_method, raw(inner)

    async def _call(self, method: str, params: Any, *, down: bool) -> Any:
        assert self._link is not None
        encoded = params if isinstance(params, Raw) else raw(params)
        if down:
            reply = await self._call_down(self._link, *self._down(method, encoded))
        else:
            reply = await self._link.call(method, encoded)
        if reply.error is not UNSET:
            body = loads(reply.error)
            body = body if isinstance(body, dict) else {}
            raise RequestError(
                int(body.get("code", -32603)), str(body.get("message", "error")), body.get("data")
            )
        return loads(reply.result)

    async def _call_down(self, link: Link, method: str, params: Raw) -> Message:
        """A request to the successor; its answer comes after the updates sent before it
        (those an `update` hook may still be working on)."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        def settle(reply: Message) -> None:
            if not future.done():
                future.set_result(reply)

        rid = link.request(method, params, lambda reply: self._in_order(lambda: settle(reply)))
        try:
            return await future
        except asyncio.CancelledError:
            link.forget(rid)
            raise

    def _relay(
        self, link: Link, rid: RequestId, method: str, params: Raw | UnsetType, down: bool
    ) -> None:
        """Forward a request unchanged, answering the original with whatever comes back."""

        def answered(reply: Message) -> None:
            if self._relayed.pop(rid, None) is not None:
                link.answer(rid, reply)

        def answered_in_order(reply: Message) -> None:
            # An answer from below goes up after the updates that came before it.
            self._in_order(lambda: answered(reply))

        self._relayed[rid] = (link, None)
        out = (
            link.request(*self._down(method, params), answered_in_order)
            if down
            else link.request(method, params, answered)
        )
        if rid in self._relayed:
            self._relayed[rid] = (link, out)

    def _spawn(self, link: Link, rid: RequestId, work: Awaitable[Any]) -> None:
        async def answer() -> None:
            try:
                result = await work
            except RequestError as exc:
                link.send(
                    Message(
                        id=rid,
                        error=error(
                            exc.code, exc.message, exc.data if exc.data is not None else UNSET
                        ),
                    )
                )
            except asyncio.CancelledError:
                link.fail(rid, -32800, "request cancelled")
                raise
            except Exception:
                correlation = os.urandom(6).hex()
                log.exception("proxy hook failed (correlation id %s)", correlation)
                link.send(
                    Message(
                        id=rid,
                        error=error(-32603, "Internal error", {"correlationId": correlation}),
                    )
                )
            else:
                link.send(
                    Message(id=rid, result=result if isinstance(result, Raw) else raw(result))
                )
            finally:
                self._tasks.pop(rid, None)

        self._tasks[rid] = asyncio.get_running_loop().create_task(answer())

    def _in_order(self, step: Callable[[], Awaitable[None] | None]) -> None:
        """Run `step` after the earlier ones (messages going up keep their order)."""
        if self._worker is not None:
            self._steps.append(step)
            return
        pending = step()
        if pending is not None:
            self._worker = asyncio.get_running_loop().create_task(self._drain(pending))

    async def _drain(self, first: Awaitable[None]) -> None:
        try:
            await first
            while self._steps:
                pending = self._steps.popleft()()
                if pending is not None:
                    await pending
        finally:
            self._worker = None

    # -- the conductor's messages ------------------------------------------------------------

    def on_request(self, link: Link, message: Message, rid: RequestId) -> None:
        method = message.method
        assert isinstance(method, str)
        if method in INITIALIZE:
            name = "_proxy/successor" if method.startswith("_") else "proxy/successor"
            self.successor_method = self.successor_notification = name
            self._relay(link, rid, "initialize", message.params, down=True)
        elif method == "initialize" and _proxy_meta(loads(message.params)):
            self.successor_method = "_proxy/successor/request"
            self.successor_notification = "_proxy/successor/notification"
            self._spawn(link, rid, self._initialize_marked(loads(message.params)))
        elif method == "initialize":
            link.fail(
                rid,
                -32600,
                "this is a proxy: run it under a conductor (acpstack conduct --proxy ...)",
            )
        elif method in SUCCESSOR:
            inner = unwrap(message.params)
            if inner is None:
                link.fail(rid, -32602, f"invalid {method} envelope")
                return
            self._from_successor(link, rid, inner.method, inner.params)
        elif method == "session/prompt" and self._overrides("prompt"):
            self._spawn(link, rid, self._prompt(loads(message.params)))
        elif method in SESSION_OPENERS and self.tools:
            params = loads(message.params)
            if isinstance(params, dict):
                servers = params.setdefault("mcpServers", [])
                servers.append({"type": "acp", "name": self.name, "serverId": self.server_id})
            self._spawn(link, rid, self._call(method, params, down=True))
        elif self._overrides("agent_request"):
            self._spawn(
                link, rid, self._hooked(self.agent_request, method, loads(message.params), True)
            )
        else:
            self._relay(link, rid, method, message.params, down=True)

    async def _initialize_marked(self, params: Any) -> Any:
        """The `_meta.proxy` handshake: forward `initialize`, say in the answer that we
        are a proxy."""
        result = await self._call("initialize", params, down=True)
        if isinstance(result, dict):
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, dict) else {}), "proxy": True}
        return result

    async def _prompt(self, params: Any) -> Any:
        return await self._call("session/prompt", await self.prompt(params), down=True)

    async def _hooked(
        self, hook: Callable[..., Awaitable[Any]], method: str, params: Any, down: bool
    ) -> Any:
        async def forward(changed: Any) -> Any:
            return await self._call(method, changed, down=down)

        return await hook(method, params, forward)

    def _from_successor(
        self, link: Link, rid: RequestId, method: str, params: Raw | UnsetType
    ) -> None:
        if method == "mcp/message" and self.tools:
            body = loads(params)
            if isinstance(body, dict) and body.get("serverId") == self.server_id:
                self._spawn(link, rid, self._mcp(body))
                return
        if method == "session/request_permission" and self._overrides("permission"):

            async def ask(changed: Any) -> Any:
                return await self._call(method, changed, down=False)

            self._spawn(link, rid, self.permission(loads(params), ask))
        elif self._overrides("client_request") and method != "session/request_permission":
            hooked = self._hooked(self.client_request, method, loads(params), False)
            self._spawn(link, rid, hooked)
        else:
            self._relay(link, rid, method, params, down=False)

    def on_notification(self, link: Link, message: Message) -> None:
        method = message.method
        if method == "$/cancel_request":
            self._cancel(link, loads(message.params))
        elif method in SUCCESSOR:
            inner = unwrap(message.params)
            if inner is None:
                log.warning("dropped an invalid %s notification", method)
                return
            name, params = inner.method, inner.params
            if name == "session/update" and self._overrides("update"):
                self._in_order(lambda: self._update(link, loads(params)))
            elif name != "$/cancel_request":  # cancellation is per hop
                self._in_order(lambda: link.notify(name, params))
        else:
            assert isinstance(method, str)
            link.send_frame(envelope(self.successor_notification, method, message.params))

    async def _update(self, link: Link, params: Any) -> None:
        try:
            changed = await self.update(params)
        except Exception:
            log.exception("the update hook failed; the update goes on unchanged")
            changed = params
        if changed is not None:
            link.notify("session/update", raw(changed))

    def _cancel(self, link: Link, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        task = self._tasks.get(rid)
        if task is not None:
            task.cancel()
            return
        relayed = self._relayed.pop(rid, None)
        if relayed is not None:
            relayed[0].forget(relayed[1])
            link.fail(rid, -32800, "request cancelled")

    # -- the MCP server of @tool methods -------------------------------------------------------

    async def _mcp(self, params: dict[str, Any]) -> Any:
        # A minimal MCP server (tools only) that answers both handshakes: `initialize`
        # (MCP up to 2025-11-25) and `server/discover` (2026-07-28, stateless).
        method, args = params.get("method"), params.get("params") or {}
        cacheable = {"resultType": "complete", "cacheScope": "private", "ttlMs": 0}
        if method == "initialize":
            result: Any = {
                "protocolVersion": args.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": self.name, "version": "1"},
            }
        elif method == "server/discover":
            versions = ["2026-07-28", "2025-11-25", "2025-06-18"]
            result = {"supportedVersions": versions, "capabilities": {"tools": {}}, **cacheable}
        elif method == "tools/list":
            tools = [_describe(name, fn) for name, fn in self.tools.items()]
            result = {"tools": tools, **cacheable}
        elif method == "tools/call":
            result = await self._run_tool(str(args.get("name")), args.get("arguments") or {})
            result["resultType"] = "complete"
        elif method == "ping":
            result = {}
        else:
            return {"error": {"code": -32601, "message": f"method not found: {method}"}}
        return {"result": result}

    async def _run_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        function = self.tools.get(name)
        if function is None:
            return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
        try:
            value = function(**arguments)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return {"content": [{"type": "text", "text": f"{name} failed: {exc}"}], "isError": True}
        return {"content": [{"type": "text", "text": str(value)}], "isError": False}


#: What every proxy sees, skipped or not: the handshake, envelopes and cancellations.
_ALWAYS_SEEN = frozenset({"initialize", "$/cancel_request"}) | INITIALIZE | SUCCESSOR
#: The methods that route messages: a subclass overriding one is never passed by.
_ROUTING = ("on_request", "on_notification", "_from_successor", "_relay", "_in_order")


def _proxy_meta(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("proxy") is True


def _describe(name: str, function: Callable[..., Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        annotation = parameter.annotation
        if isinstance(annotation, str):
            annotation = {"str": str, "int": int, "float": float, "bool": bool}.get(annotation)
        properties[parameter.name] = {"type": _JSON_TYPES.get(annotation, "string")}
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    return {
        "name": name,
        "description": inspect.getdoc(function) or name,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }
