"""In-process proxies that would only forward a message are routed past: the client and the
agent see exactly what they see when the message goes through the proxy (same messages,
same order), and a proxy with a hook still gets every message of that hook's kind."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from acpstack.proxy import Proxy
from acpstack.proxy._link import Link, Message, RequestId, loads, raw
from acpstack.transports import DataCallback, EofCallback, Transport

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_chain import ACPSTACK, ROOT  # noqa: E402
from test_routing import PASS, WAIT, chain, init  # noqa: E402

pytestmark = pytest.mark.timeout(90)


class Counting(Proxy):
    """Overrides no hook; records the frames that reach it (to show what was routed past)."""

    async def serve(self, transport: Transport) -> None:
        self.frames: list[bytes] = []
        reading = transport.start_reading

        def start_reading(on_data: DataCallback, on_eof: EofCallback) -> None:
            def data(chunk: bytes) -> None:
                self.frames.append(chunk)
                on_data(chunk)

            reading(data, on_eof)

        transport.start_reading = start_reading  # type: ignore[method-assign]
        await super().serve(transport)

    def methods(self) -> list[str]:
        """The methods of the messages that reached it (inside their envelopes), once each."""
        found: list[str] = []
        for line in b"".join(self.frames).splitlines():
            message = json.loads(line)
            method = message.get("method")
            if method == "proxy/successor":
                method = message["params"]["method"]
            if method is not None and method not in found:
                found.append(method)
        return found


class PromptHook(Counting):
    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        return params


class UpdateHook(Counting):
    async def update(self, params: dict[str, Any]) -> dict[str, Any] | None:
        return params


async def scenario(proxies: list[Any]) -> list[Any]:
    """A session's traffic, as the client saw it: answers, notifications, the agent's
    requests, and at the end every method the agent received, in order."""
    seen: list[Any] = []
    async with chain(proxies) as client:
        assert client.link is not None
        link = client.link
        answer_request = client.on_request

        def on_request(peer: Link, message: Message, rid: RequestId) -> None:
            seen.append(("asked", message.method, loads(message.params)))
            answer_request(peer, message, rid)

        client.on_request = on_request  # type: ignore[method-assign]
        await client.result("initialize", init())
        prompt = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi ✓"}]}
        seen.append(await client.result("session/prompt", prompt))
        for n in range(3):
            link.notify("_ping", raw({"as": "session/update", "n": n}))
        for _ in range(3):
            note = await asyncio.wait_for(client.notes.get(), WAIT)
            seen.append(("note", note.method, loads(note.params)))
        for method in ("session/request_permission", "fs/read_text_file", "terminal/create"):
            seen.append(await client.result("_ask", {"as": method, "sessionId": "s"}))
        held = asyncio.ensure_future(link.call("_hold", raw({})))
        await client.result("_echo", {})  # the agent has the `_hold` now
        link.notify("$/cancel_request", raw({"requestId": link._next_id - 1}))
        cancelled = await asyncio.wait_for(held, WAIT)
        assert cancelled.error is not UNSET
        seen.append(("cancelled", loads(cancelled.error)["code"]))
        link.notify("session/cancel", raw({"sessionId": "s"}))
        seen.append(await client.result("_echo", {"last": True}))
    return seen


async def test_pass_through_proxies_routed_past_give_what_proxy_processes_give() -> None:
    through = await scenario([PASS, PASS])
    past = [Counting(), Counting()]
    assert await scenario(past) == through
    assert through[-1]["seen"][-2:] == ["session/cancel", "_echo"]
    assert ("cancelled", -32800) in through
    for proxy in past:  # each got its `proxy/initialize`, and nothing else
        assert proxy.methods() == ["proxy/initialize"]


async def test_a_hook_sees_its_messages_and_is_routed_past_for_the_others() -> None:
    through = await scenario([PASS, PASS])
    prompt, update = PromptHook(), UpdateHook()
    assert await scenario([prompt, update]) == through
    assert prompt.methods() == ["proxy/initialize", "session/prompt"]
    # Notifications going up pass through an update hook (its queue keeps them in order),
    # and so do the requests going down, whose answers come up through it; notifications
    # going down (`_ping`, `session/cancel`) and the agent's requests going up (which a
    # proxy relays at once, as they come) are routed past it.
    assert update.methods() == [
        "proxy/initialize",
        "session/prompt",
        "session/update",
        "_ask",
        "_hold",
        "_echo",
    ]


def test_a_nested_chain_of_routed_past_proxies_passes_the_proxy_checks() -> None:
    """Proxy mode (no agent: the chain is itself a proxy), where what is routed past the
    last in-process proxy goes to the outer successor, wrapped."""
    pass_module = str(ROOT / "benchmarks" / "peers" / "pass_proxy.py")  # a Proxy subclass
    conductor = [*ACPSTACK, "conduct", *[f"--proxy-module={pass_module}"] * 2]
    done = subprocess.run(
        [*ACPSTACK, "check", "agent", "--proxy", "--", *conductor],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "3 passed, 0 failed" in done.stdout, done.stdout + done.stderr
