"""The conductor's routing rules on the wire: a `Conductor` in this process, real proxy and
agent processes (tests/proxy/peers), and the test as a raw JSON-RPC client on a memory
transport, so every assertion is about the messages themselves."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from acpstack.proxy import ChainEnded, Conductor, Proxy, tool
from acpstack.proxy._link import Link, Message, RequestId, loads, raw
from acpstack.transports import memory_pair

pytestmark = pytest.mark.timeout(60)

PEERS = Path(__file__).parent / "peers"
PASS = [sys.executable, str(PEERS / "pass_proxy.py")]
AGENT = [sys.executable, str(PEERS / "recording_agent.py")]
WAIT = 30


class RawClient:
    """The upstream end: records notifications, answers requests with what it got."""

    def __init__(self) -> None:
        self.notes: asyncio.Queue[Message] = asyncio.Queue()
        self.link: Link | None = None

    def on_request(self, link: Link, message: Message, rid: RequestId) -> None:
        link.send(
            Message(
                id=rid, result=raw({"answered": message.method, "params": loads(message.params)})
            )
        )

    def on_notification(self, link: Link, message: Message) -> None:
        self.notes.put_nowait(message)

    def on_closed(self, link: Link, reason: str) -> None:
        pass

    async def call(self, method: str, params: Any) -> Message:
        assert self.link is not None
        return await asyncio.wait_for(self.link.call(method, raw(params)), WAIT)

    async def result(self, method: str, params: Any) -> Any:
        reply = await self.call(method, params)
        assert reply.error is UNSET, loads(reply.error)
        return loads(reply.result)


@contextlib.asynccontextmanager
async def chain(proxies: list[Any], agent: Any = AGENT, **options: Any) -> AsyncIterator[RawClient]:
    ours, theirs = memory_pair()
    conductor = Conductor(proxies, agent, **options)
    running = asyncio.ensure_future(conductor.run(theirs))
    client = RawClient()
    client.link = Link(ours, "the conductor", client)
    client.link.start()
    try:
        yield client
    finally:
        await ours.close()
        await asyncio.wait_for(running, WAIT)


def init(version: int = 1) -> dict[str, Any]:
    return {"protocolVersion": version, "clientCapabilities": {}}


@pytest.mark.parametrize("count", [0, 2])
async def test_initialize_reaches_the_agent_as_initialize_with_the_version_unchanged(
    count: int,
) -> None:
    async with chain([PASS] * count) as client:
        result = await client.result("initialize", init())
        assert result["protocolVersion"] == 1
        # Proxies learn that the conductor bridges MCP-over-ACP; without proxies the client
        # sees exactly what the agent said.
        assert result["agentCapabilities"]["mcpCapabilities"].get("acp") is (
            True if count else None
        )
        echo = await client.result("_echo", {})
        assert echo["seen"] == ["initialize", "_echo"]


async def test_a_version_above_ours_is_capped() -> None:
    async with chain([PASS]) as client:
        assert (await client.result("initialize", init(7)))["protocolVersion"] == 2


async def test_requests_notifications_and_agent_requests_pass_both_ways_unchanged() -> None:
    params = {"text": "héllo ✓", "n": 12345678901234567890, "x": 1.5, "_meta": {"k": [1, None]}}
    async with chain([PASS, PASS]) as client:
        await client.result("initialize", init())
        echo = await client.result("_echo", params)
        assert echo["method"] == "_echo" and echo["params"] == params
        assert client.link is not None
        client.link.notify("_ping", raw(params))
        pong = await asyncio.wait_for(client.notes.get(), WAIT)
        assert (pong.method, loads(pong.params)) == ("_pong", params)
        asked = await client.result("_ask", {"q": 1})
        assert asked == {"answered": "_question", "params": {"q": 1}}


async def test_cancel_request_is_answered_on_its_hop_and_never_forwarded() -> None:
    async with chain([PASS, PASS]) as client:
        await client.result("initialize", init())
        assert client.link is not None
        held = asyncio.ensure_future(client.link.call("_hold", raw({})))
        # `_hold` reached the agent once a later request's `seen` lists it.
        assert (await client.result("_echo", {}))["seen"][-2:] == ["_hold", "_echo"]
        client.link.notify("$/cancel_request", raw({"requestId": 2}))
        reply = await asyncio.wait_for(held, WAIT)
        assert loads(reply.error)["code"] == -32800
        client.link.notify("session/cancel", raw({"sessionId": "s"}))
        seen = (await client.result("_echo", {}))["seen"]
        assert seen == ["initialize", "_hold", "_echo", "session/cancel", "_echo"]


async def test_a_successor_envelope_from_the_client_is_refused() -> None:
    async with chain([PASS]) as client:
        reply = await client.call("proxy/successor", {"method": "_echo"})
        assert loads(reply.error)["code"] == -32601


async def test_legacy_names_are_sent_and_the_proxy_answers_in_kind() -> None:
    async with chain([PASS, PASS], legacy_names=True) as client:
        await client.result("initialize", init())
        assert (await client.result("_echo", {"a": 1}))["params"] == {"a": 1}


async def test_chains_nest_a_conductor_in_proxy_mode_is_a_proxy() -> None:
    inner = [sys.executable, "-m", "acpstack", "conduct", "--proxy", " ".join(PASS)]
    async with chain([inner, PASS]) as client:
        result = await client.result("initialize", init())
        assert result["agentCapabilities"]["mcpCapabilities"]["acp"] is True
        assert (await client.result("_echo", {"a": 1}))["seen"] == ["initialize", "_echo"]
        assert client.link is not None
        client.link.notify("_ping", raw({"b": 2}))
        assert loads((await asyncio.wait_for(client.notes.get(), WAIT)).params) == {"b": 2}
        assert (await client.result("_ask", {"q": 2}))["params"] == {"q": 2}


async def test_a_proxy_run_as_an_agent_says_it_needs_a_conductor() -> None:
    async with chain([], agent=PASS) as client:
        reply = await client.call("initialize", init())
        assert "run it under a conductor" in loads(reply.error)["message"]


async def test_a_component_that_cannot_start_ends_the_chain_with_its_name() -> None:
    ours, theirs = memory_pair()
    conductor = Conductor([["/nonexistent/proxy"]], AGENT)
    with pytest.raises(ChainEnded, match=r"cannot start proxy 0 \(`/nonexistent/proxy`\)"):
        await asyncio.wait_for(conductor.run(theirs), WAIT)
    await ours.close()


async def test_a_line_that_is_not_json_gets_a_parse_error_and_the_chain_goes_on() -> None:
    ours, theirs = memory_pair()
    running = asyncio.ensure_future(Conductor([PASS], AGENT).run(theirs))
    lines: asyncio.Queue[bytes] = asyncio.Queue()
    buffer = bytearray()

    def data(chunk: bytes) -> None:
        buffer.extend(chunk)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            lines.put_nowait(line)

    ours.start_reading(data, lambda: None)
    try:
        ours.write(b"this is not json\n")
        first = json.loads(await asyncio.wait_for(lines.get(), WAIT))
        assert first["id"] is None and first["error"]["code"] == -32700
        ours.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
        )
        second = json.loads(await asyncio.wait_for(lines.get(), WAIT))
        assert second["id"] == 1 and second["result"]["protocolVersion"] == 1
    finally:
        await ours.close()
        await asyncio.wait_for(running, WAIT)


# -- proxies in the conductor's process ----------------------------------------------------


class Tagging(Proxy):
    """Adds a mark to every prompt on its way to the agent (in this process)."""

    def __init__(self, mark: str) -> None:
        super().__init__()
        self.mark = mark

    async def prompt(self, params: Any) -> Any:
        return {**params, "prompt": [*params["prompt"], {"type": "text", "text": self.mark}]}


class Dying(Proxy):
    """Ends on the first prompt: its end of the pipe closes, as a process's would."""

    async def prompt(self, params: Any) -> Any:
        assert self._link is not None
        await self._link.transport.close()
        return params


async def test_in_process_proxies_route_as_processes_do() -> None:
    # Two `Proxy` instances in this process and one process between them: the same rules.
    async with chain([Tagging("first"), PASS, Tagging("second")]) as client:
        result = await client.result("initialize", init())
        assert result["protocolVersion"] == 1
        assert result["agentCapabilities"]["mcpCapabilities"]["acp"] is True
        prompt = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
        answer = await client.result("session/prompt", prompt)
        assert answer["seen"] == ["initialize", "session/prompt"]
        # Each proxy's hook ran, in chain order.
        assert [block["text"] for block in answer["params"]["prompt"]] == ["hi", "first", "second"]


async def test_an_in_process_proxy_that_ends_ends_the_chain_with_its_name() -> None:
    ours, theirs = memory_pair()
    conductor = Conductor([Dying()], AGENT)
    running = asyncio.ensure_future(conductor.run(theirs))
    client = RawClient()
    client.link = Link(ours, "the conductor", client)
    client.link.start()
    try:
        await client.result("initialize", init())
        reply = await client.call("session/prompt", {"sessionId": "s", "prompt": []})
        error = loads(reply.error)
        assert error["code"] == -32603 and "proxy 0 (`Dying, in-process`) ended" in error["message"]
        with pytest.raises(ChainEnded, match=r"proxy 0 \(`Dying, in-process`\) ended"):
            await asyncio.wait_for(running, WAIT)
    finally:
        await ours.close()


# -- in-process proxies are routed past what they would pass on unchanged -------------------


class Quiet(Proxy):
    """Overrides nothing."""


class Prompting(Proxy):
    async def prompt(self, params: Any) -> Any:
        return {**params, "tagged": True}


class Updating(Proxy):
    """A slow `update` hook: each update takes a few loop turns."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: list[int] = []

    async def update(self, params: Any) -> Any:
        for _ in range(3):
            await asyncio.sleep(0)
        self.updates.append(params["update"]["index"])
        return params


class Asking(Proxy):
    async def permission(self, params: Any, ask: Any) -> Any:
        return await ask(params)


class WithTools(Proxy):
    @tool
    def add(self, a: int, b: int) -> int:
        """Adds."""
        return a + b


class Routing(Proxy):
    """Changes the routing itself: never passed by."""

    def on_notification(self, link: Link, message: Any) -> None:
        super().on_notification(link, message)


def passes(proxy: Proxy, method: str, down: bool, request: bool) -> bool:
    return proxy.passes_through(method, down=down, request=request)


@pytest.mark.parametrize(
    ("proxy", "method", "down", "is_request", "expected"),
    [
        (Quiet(), "session/prompt", True, True, True),
        (Quiet(), "session/update", False, False, True),
        (Quiet(), "session/request_permission", False, True, True),
        (Quiet(), "fs/read_text_file", False, True, True),
        (Quiet(), "session/cancel", True, False, True),
        (Quiet(), "initialize", True, True, False),
        (Quiet(), "proxy/initialize", True, True, False),
        (Quiet(), "proxy/successor", False, False, False),
        (Quiet(), "$/cancel_request", True, False, False),
        (Prompting(), "session/prompt", True, True, False),
        (Prompting(), "session/new", True, True, True),
        (Prompting(), "session/update", False, False, True),
        (Updating(), "session/update", False, False, False),
        (Updating(), "_pong", False, False, False),  # every notification up keeps its turn
        (Updating(), "session/prompt", True, True, False),  # its answer comes back up
        (Updating(), "fs/read_text_file", False, True, True),
        (Asking(), "session/request_permission", False, True, False),
        (Asking(), "fs/read_text_file", False, True, True),
        (WithTools(), "session/new", True, True, False),
        (WithTools(), "mcp/message", False, True, False),
        (WithTools(), "session/prompt", True, True, True),
        (Routing(), "session/prompt", True, True, False),
        (Routing(), "session/update", False, False, False),
    ],
)
def test_what_a_proxy_passes_through(
    proxy: Proxy, method: str, down: bool, is_request: bool, expected: bool
) -> None:
    assert passes(proxy, method, down, is_request) is expected


def count_frames(proxy: Proxy) -> list[bytes]:
    """A spy on the frames the proxy's link is handed from now on."""
    link = proxy._link
    assert link is not None
    seen: list[bytes] = []
    handle = link._frame

    def spy(frame: Any) -> None:
        seen.append(frame)
        handle(frame)

    link._frame = spy  # type: ignore[method-assign]
    return seen


async def test_a_pass_through_proxy_is_not_handed_what_it_would_pass_on() -> None:
    quiet, tagging = Quiet(), Prompting()
    async with chain([quiet, tagging]) as client:
        assert client.link is not None
        assert (await client.result("initialize", init()))["protocolVersion"] == 1
        quiet_frames, tagging_frames = count_frames(quiet), count_frames(tagging)
        prompt = {"sessionId": "s", "prompt": []}
        answer = await client.result("session/prompt", prompt)
        assert answer["params"] == {**prompt, "tagged": True}
        echo = await client.result("_echo", {"x": 1})
        assert echo == {
            "method": "_echo",
            "params": {"x": 1},
            "seen": ["initialize", "session/prompt", "_echo"],
            "id": echo["id"],
        }
        client.link.notify("_ping", None)  # type: ignore[arg-type]
        pong = await asyncio.wait_for(client.notes.get(), WAIT)
        assert pong.method == "_pong"
        assert await client.result("_ask", {"q": 1}) == {
            "answered": "_question",
            "params": {"q": 1},
        }
        # The pass-through proxy saw none of it; the prompt hook saw its prompt and that
        # prompt's answer, nothing else.
        assert quiet_frames == []
        assert len(tagging_frames) == 2 and b'"session/prompt"' in tagging_frames[0]


async def test_an_answer_does_not_overtake_the_updates_an_update_hook_holds() -> None:
    updating = Updating()
    async with chain([Quiet(), updating, Quiet()]) as client:
        await client.result("initialize", init())
        answer = await client.result("_chatter", {"count": 50})
        assert answer["method"] == "_chatter"
        # Every update reached the client before the answer did, in order.
        got = [client.notes.get_nowait() for _ in range(client.notes.qsize())]
        assert [loads_index(m) for m in got] == list(range(50))
        assert updating.updates == list(range(50))


def loads_index(message: Any) -> int:
    assert message.method == "session/update"
    index: int = loads(message.params)["update"]["index"]
    return index
