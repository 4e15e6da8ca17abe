"""The conductor: runs a proxy chain and looks like one ordinary ACP agent to its client.

Client → Conductor → Proxy₀ … Proxyₙ₋₁ → Agent (the proxy-chains RFD). Positions: -1 is
the upstream peer (the client; in proxy mode the outer conductor), 0..n-1 the proxies, n
the agent (in proxy mode: the outer chain's successor, reached through upstream). Every
message enters at a position heading down (towards the agent) or up (towards the client)
and goes to the neighbour that way:

- from upstream, plain: down from -1; wrapped in `proxy/successor` (proxy mode): up from n;
- from proxy i, wrapped in `proxy/successor`: down from i; plain: up from i;
- from the agent, plain: up from n.

Delivered to a proxy from above it is plain, from below it is wrapped; to the agent and
to upstream (going up) it is plain; in proxy mode, to the outer successor it is wrapped.
A proxy running in the conductor's process is skipped for the messages it would pass on
unchanged (`Proxy.passes_through`: it has no hook for them), so it costs nothing there.
`initialize` becomes `proxy/initialize` for a proxy and stays `initialize` for the agent,
with the protocol version capped at what we speak. Results and errors come back unchanged,
except that a proxy learns `mcpCapabilities.acp` from the agent's answer (the conductor
bridges MCP-over-ACP for agents without it). `$/cancel_request` is answered on its own hop
and never forwarded; `session/cancel` is a notification like any other.

What the conductor only routes (see `pass_on`: plain on both sides, under its own method,
neither changed nor acted on) goes the fast lane: the bytes as they came, a request under
its own id while the next hop has no request of that id in flight, its answer back the
same way; the rest is decoded (params stay raw) and sent anew.

When any component ends, the chain ends: pending requests of the upstream peer fail with
an error naming the component and how it ended, and every process is stopped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any, cast

import msgspec
from msgspec import UNSET, Raw, UnsetType

from acpstack.proxy._inprocess import InProcessEnd
from acpstack.proxy._link import (
    Link,
    Message,
    Outbox,
    Peek,
    RequestId,
    envelope,
    loads,
    raw,
    unwrap,
)
from acpstack.proxy._mcp_bridge import SESSION_OPENERS, McpBridge
from acpstack.proxy._proxy import Proxy
from acpstack.transports import Transport

log = logging.getLogger("acpstack.proxy")

#: The highest ACP protocol version the conductor passes on (it routes v1 and v2 alike).
MAX_PROTOCOL_VERSION = 2
INITIALIZE = frozenset({"initialize", "proxy/initialize", "_proxy/initialize"})
SUCCESSOR = frozenset(
    {
        "proxy/successor",
        "_proxy/successor",
        "_proxy/successor/request",
        "_proxy/successor/notification",
    }
)
CANCEL_REQUEST = "$/cancel_request"
# Methods whose messages the conductor changes or acts on: never passed on as they came.
# (The others are, when their route needs no envelope; see `pass_on`.)
ROUTED_WHOLE = INITIALIZE | SUCCESSOR | SESSION_OPENERS | {CANCEL_REQUEST, "mcp/message"}
REQUEST_CANCELLED = -32800
CHAIN_ENDED = -32603
_SKIPS_KEPT = 1024
_UNKNOWN: Any = object()

Command = Sequence[str] | str
#: A proxy: a command line (a process), or a `Proxy` object (run in the conductor's process).
Component = Command | Proxy


class ChainEnded(Exception):
    """A component of the chain ended (or could not start); the message says which and how."""


def _shown(command: Component) -> str:
    if isinstance(command, Proxy):
        return f"{type(command).__name__}, in-process"
    return command if isinstance(command, str) else shlex.join(command)


class Conductor:
    """Spawns `proxies` (each a command line or argv; a `Proxy` object runs as a task of
    this process instead, on an in-memory link) and `agent`, and routes one upstream
    connection through them. Without `agent` it runs in proxy mode: it must be initialized
    with `proxy/initialize`, and its last proxy's successor is its own (chains nest).

    `legacy_names` sends `_proxy/initialize` and `_proxy/successor` (older conductors and
    proxies); both spellings are always accepted. `record` names a directory where each
    hop's traffic is recorded (`acpstack inspect` runs in front of every component)."""

    def __init__(
        self,
        proxies: Sequence[Component],
        agent: Command | None,
        *,
        legacy_names: bool = False,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        record: str | None = None,
    ) -> None:
        self.proxy_commands: list[Component] = list(proxies)
        self.agent_command: Command | None = agent
        self.proxy_mode: bool = agent is None
        self.cwd: str | None = cwd
        self.env: dict[str, str] | None = env
        self.record: str | None = record
        self.initialize_name: str = "_proxy/initialize" if legacy_names else "proxy/initialize"
        self.successor_name: str = "_proxy/successor" if legacy_names else "proxy/successor"
        self.upstream: Link | None = None
        self.components: list[Link] = []
        self.ended: ChainEnded | None = None
        self._done = asyncio.Event()
        self._outbox = Outbox()  # one write per link for each read routed
        # (link, id of its request) -> (link we forwarded it on, id there): for cancellation.
        self._relayed: dict[tuple[int, RequestId], tuple[Link, RequestId]] = {}
        self.bridge: McpBridge = McpBridge(self)
        # (entry position, down, method, request) -> the position it is delivered to
        self._skips: dict[tuple[int, bool, str, bool], int] = {}
        self.agent_speaks_acp_mcp: bool = False

    @property
    def depth(self) -> int:
        """Position n: the agent (or, in proxy mode, the outer successor)."""
        return len(self.proxy_commands)

    # -- running ----------------------------------------------------------------------

    async def run(self, upstream: Transport) -> None:
        """Route `upstream` through the chain until it closes (returns) or a component
        ends (raises `ChainEnded`). Every process is stopped on the way out."""
        from acpstack.transports import SubprocessTransport

        try:
            commands: list[Component] = [*self.proxy_commands]
            names = [f"proxy {i} (`{_shown(c)}`)" for i, c in enumerate(commands)]
            if self.agent_command is not None:
                commands.append(self.agent_command)
                names.append(f"the agent (`{_shown(self.agent_command)}`)")
            for command, name in zip(commands, names, strict=True):
                if isinstance(command, Proxy):
                    end = InProcessEnd(command, name)
                    self.components.append(Link(end, name, self, self._outbox))
                    continue
                try:
                    argv = shlex.split(command) if isinstance(command, str) else list(command)
                    argv = self._recorded(argv, len(self.components))
                    transport = await SubprocessTransport.spawn(
                        argv,
                        cwd=self.cwd,
                        env=self.env,
                        stderr_callback=_stderr_to_ours,
                        direct_io=True,  # every message crosses two pipes here
                    )
                except (OSError, ValueError) as exc:
                    raise ChainEnded(f"cannot start {name}: {exc}") from None
                self.components.append(Link(transport, name, self, self._outbox))
            self.upstream = Link(upstream, "the client", self, self._outbox)
            self.upstream.position = -1
            for position, link in enumerate(self.components):
                link.position = position
            for link in (*self.components, self.upstream):
                link.start()
            await self._done.wait()
        finally:
            await self._stop()
        if self.ended is not None:
            raise self.ended

    def _recorded(self, argv: list[str], index: int) -> list[str]:
        """With `record`, the component runs behind `acpstack inspect --record`: each hop's
        traffic in its own recording (`0-proxy.jsonl`, ..., `N-agent.jsonl`)."""
        if self.record is None:
            return argv
        kind = "proxy" if index < self.depth else "agent"
        path = os.path.join(self.record, f"{index}-{kind}.jsonl")
        return [sys.executable, "-m", "acpstack", "inspect", "--record", path, "--", *argv]

    async def _stop(self) -> None:
        self._done.set()
        await self.bridge.aclose()
        links = [*self.components, *([self.upstream] if self.upstream else [])]
        for link in links:
            link.flush()
            link.closed = True  # ends are expected now: no more routing
        results = await asyncio.gather(
            *(link.transport.close() for link in links), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result

    def on_closed(self, link: Link, reason: str) -> None:
        if self._done.is_set():
            return
        if link is self.upstream:
            log.info("the client left: the chain stops")
        else:
            self.ended = ChainEnded(f"{link.name} ended: {reason}")
            log.error("the proxy chain ended: %s", self.ended)
            upstream = self.upstream
            for (link_key, rid), _target in list(self._relayed.items()):
                if upstream is not None and link_key == id(upstream):
                    upstream.fail(rid, CHAIN_ENDED, f"the proxy chain ended: {self.ended}")
            self._relayed.clear()
        self._done.set()

    # -- routing ----------------------------------------------------------------------

    def _entry(self, link: Link, method: str) -> tuple[int, bool]:
        """Where a message from `link` enters the chain and whether it heads down; the
        method it carries is the envelope's own unless it is `proxy/successor`."""
        position = link.position
        wrapped = method in SUCCESSOR
        if position == -1:
            return (self.depth, False) if wrapped and self.proxy_mode else (-1, True)
        if position < self.depth:
            return position, wrapped
        return position, False

    def _target(
        self, position: int, down: bool, method: str, request: bool
    ) -> tuple[Link, str, bool, int]:
        """The link to deliver to, the method to use there, whether to wrap it, and its
        position. In-process proxies that would pass the message on unchanged are skipped."""
        key = (position, down, method, request)
        target = self._skips.get(key)
        if target is None:
            step = 1 if down else -1
            target = position + step
            while 0 <= target < self.depth and self._passed_by(target, method, down, request):
                target += step
            if len(self._skips) >= _SKIPS_KEPT:  # (method names come from the peers)
                self._skips.clear()
            self._skips[key] = target
        return (*self._at(target, down, method), target)

    def _passed_by(self, position: int, method: str, down: bool, request: bool) -> bool:
        proxy = self.proxy_commands[position]
        return isinstance(proxy, Proxy) and proxy.passes_through(method, down=down, request=request)

    def _at(self, target: int, down: bool, method: str) -> tuple[Link, str, bool]:
        if target == -1:
            assert self.upstream is not None
            return self.upstream, method, False
        if target < self.depth:
            link = self.components[target]
            if down:
                return link, self.initialize_name if method in INITIALIZE else method, False
            return link, method, True
        if self.proxy_mode:  # the outer chain's successor, through our own conductor
            assert self.upstream is not None
            return self.upstream, "initialize" if method in INITIALIZE else method, True
        return self.components[target], "initialize" if method in INITIALIZE else method, False

    def _open(self, link: Link, message: Message) -> tuple[int, bool, str, Raw | UnsetType] | None:
        """Entry position, direction, inner method and params; None (answered) if malformed."""
        assert isinstance(message.method, str)
        position, down = self._entry(link, message.method)
        if message.method not in SUCCESSOR:
            if position == -1 and not down:
                return None
            return position, down, message.method, message.params
        if position == -1 or (position == self.depth and not self.proxy_mode):
            self._reject(link, message, -32601, f"{message.method} is for proxies")
            return None
        inner = unwrap(message.params)
        if inner is None:
            self._reject(link, message, -32602, f"invalid {message.method} envelope")
            return None
        return position, down, inner.method, inner.params

    def _reject(self, link: Link, message: Message, code: int, text: str) -> None:
        log.warning("%s: %s", link.name, text)
        if message.id is not UNSET:
            link.fail(message.id, code, text)

    def _deliver_params(self, method: str, params: Raw | UnsetType, wrap: bool) -> Raw | UnsetType:
        if not wrap:
            return params
        if params is UNSET:
            return Raw(b'{"method":' + msgspec.json.encode(method) + b"}")
        return Raw(
            b'{"method":' + msgspec.json.encode(method) + b',"params":' + bytes(params) + b"}"
        )

    def pass_on(self, link: Link, line: bytes, peek: Peek) -> bool:
        """The fast lane: a message whose route takes it to its next hop plain (not in an
        envelope) under its own method, that the conductor neither changes nor acts on,
        goes on as the bytes it came in, a request with its own id (its answer comes back
        the same way, `relay_answer`). False: it goes the whole way (`on_request`,
        `on_notification`), e.g. when the next hop already uses that id."""
        request = peek.id is not UNSET
        lanes = link.lanes[request]
        method = cast(str, peek.method)  # (the link passes on only what has one)
        target = lanes.get(method, _UNKNOWN)
        if target is _UNKNOWN:
            target = self._lane(link, method, request)
            if len(lanes) >= _SKIPS_KEPT:  # (method names come from the peers)
                lanes.clear()
            lanes[method] = target
        if target is None or self._done.is_set():
            return False
        if not request:
            target.write_now(line)
            return True
        rid = peek.id
        assert not isinstance(rid, UnsetType)
        key = (id(link), rid)
        if key in self._relayed or not target.relay(line, rid, link):
            return False
        self._relayed[key] = (target, rid)
        return True

    def _lane(self, link: Link, method: str, request: bool) -> Link | None:
        """The link a message of `method` from `link` goes on to as it came, or None when
        the conductor must handle it whole (see `pass_on`)."""
        if method in ROUTED_WHOLE:
            return None
        # (plain, so from upstream it heads down, from the others up)
        target, out_method, wrap, _ = self._target(
            link.position, link.position == -1, method, request
        )
        return None if wrap or out_method != method else target

    def relay_answer(self, source: Link, rid: RequestId, line: bytes | None, text: str) -> None:
        """The answer to a request `pass_on` sent: to `source` as it came, unless the
        request was cancelled on its hop or the chain ended (answered already); None:
        the link it went to ended first."""
        if self._relayed.pop((id(source), rid), None) is None:
            return
        if line is not None:
            source.write_now(line)
        else:
            source.fail(rid, CHAIN_ENDED, text)

    def on_notification(self, link: Link, message: Message) -> None:
        if self._done.is_set():
            return
        if message.method == CANCEL_REQUEST:
            self._cancel(link, message)
            return
        opened = self._open(link, message)
        if opened is None:
            return
        position, down, method, params = opened
        if method == CANCEL_REQUEST:
            log.debug("%s wrapped a $/cancel_request: cancellation is per hop, dropped", link.name)
            return
        target, out_method, wrap, _ = self._target(position, down, method, False)
        if self.bridge.takes_notification(target, out_method, params):
            return
        if wrap:
            target.send_frame(envelope(self.successor_name, out_method, params))
        elif out_method == message.method and params is message.params:
            target.send_frame(link.frame + b"\n")  # unchanged: the bytes as they came
        else:
            target.notify(out_method, params)

    def on_request(self, link: Link, message: Message, rid: RequestId) -> None:
        if self._done.is_set():
            return
        opened = self._open(link, message)
        if opened is None:
            return
        position, down, method, params = opened
        target, out_method, wrap, at = self._target(position, down, method, True)
        key = (id(link), rid)
        to_agent = down and not self.proxy_mode and at == self.depth
        agent_initialize = to_agent and method in INITIALIZE
        if method in INITIALIZE:
            params = _cap_version(params)
        elif to_agent:
            params = self.bridge.rewrite_session_params(out_method, params)

        def on_reply(reply: Message) -> None:
            if self._relayed.pop(key, None) is None:
                return  # cancelled on its hop, or the chain ended: answered already
            if agent_initialize and reply.result is not UNSET:
                result = self._advertise_acp(reply.result, to_proxy=position >= 0)
                reply = Message(id=reply.id, result=result)
            link.answer(rid, reply)

        self._relayed[key] = (target, None)
        if wrap:
            out_params = self._deliver_params(out_method, params, True)
            out_id = target.request(self.successor_name, out_params, on_reply)
        else:
            out_id = target.request(out_method, params, on_reply)
        if key in self._relayed:
            self._relayed[key] = (target, out_id)

    def _cancel(self, link: Link, message: Message) -> None:
        params = loads(message.params)
        rid = params.get("requestId") if isinstance(params, dict) else None
        relayed = self._relayed.pop((id(link), rid), None)
        if relayed is None:
            return  # answered already, or never ours: nothing to do
        target, out_id = relayed
        target.forget(out_id)
        link.fail(rid, REQUEST_CANCELLED, "request cancelled")

    def _advertise_acp(self, result: Raw, *, to_proxy: bool) -> Raw:
        """Note whether the agent speaks MCP-over-ACP; the `initialize` result as a proxy
        sees it says it does (the conductor bridges when it does not)."""
        body = loads(result)
        if not isinstance(body, dict):
            return result
        caps = body.setdefault("agentCapabilities", {})
        if not isinstance(caps, dict):
            return result
        mcp = caps.setdefault("mcpCapabilities", {})
        if not isinstance(mcp, dict):
            return result
        self.agent_speaks_acp_mcp = mcp.get("acp") is True
        if not to_proxy or self.agent_speaks_acp_mcp:
            return result
        mcp["acp"] = True
        return raw(body)


def _cap_version(params: Raw | UnsetType) -> Raw | UnsetType:
    body = loads(params)
    version = body.get("protocolVersion") if isinstance(body, dict) else None
    if isinstance(version, int) and version > MAX_PROTOCOL_VERSION:
        assert isinstance(body, dict)
        body["protocolVersion"] = MAX_PROTOCOL_VERSION
        return raw(body)
    return params


def _stderr_to_ours(line: str) -> None:
    # Components log to stderr as we do: their lines go on to ours, for the user to see.
    sys.stderr.write(line + "\n")


async def conduct_stdio(
    proxies: Sequence[Component], agent: Command | None, **options: Any
) -> None:
    """Run a conductor on this process's stdin/stdout (`acpstack conduct`)."""
    from acpstack.transports import open_stdio_transport

    transport = await open_stdio_transport(direct_io=True)
    conductor = Conductor(proxies, agent, **options)
    await conductor.run(transport)


__all__ = ["ChainEnded", "Conductor", "conduct_stdio"]
