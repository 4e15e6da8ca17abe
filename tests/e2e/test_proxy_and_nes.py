"""The proxy-chain methods (`proxy/initialize`, `proxy/successor`, and their `_proxy/*`
input spellings) and the frozen `nes` extension (`nes/*`, `document/*`) end to end: an
agent process (tests/e2e/peers/proxy_nes_agent.py) driven over real pipes by our client on
a connection opened with unstable=True and extensions=("nes",)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acpstack import CapabilityError, RequestError
from acpstack.client import ClientConnection, ClientRuntime, connect_client
from acpstack.schema import v1_nes as nes
from acpstack.schema import v1_unstable as acpu
from acpstack.transports import SubprocessTransport

AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "proxy_nes_agent.py")]
pytestmark = pytest.mark.timeout(60)


class Conductor(ClientRuntime):
    """The client end of a proxy's upstream connection: it answers what the proxy forwards
    to its successor (`proxy/successor`) itself, and records it."""

    def __init__(self) -> None:
        super().__init__()
        self.forwarded: list[Any] = []

    async def proxy_successor(self, params: acpu.ProxySuccessorRequest) -> Any:
        self.forwarded.append([params.method, params.params])
        return {"handledBy": "conductor", "method": params.method}


@contextlib.asynccontextmanager
async def connected(
    client: ClientRuntime, *agent_args: str, unstable: bool = True, extensions: Any = ("nes",)
) -> AsyncIterator[ClientConnection]:
    transport = await SubprocessTransport.spawn([*AGENT, *agent_args])
    conn = connect_client(client, transport, unstable=unstable, extensions=extensions)
    async with conn.connection:
        yield conn


async def seen(conn: ClientConnection, count: int) -> list[Any]:
    events: list[Any] = await conn.agent.call("_seen", {"count": count})
    return events


async def test_proxy_initialize_and_successor_both_ways_and_both_spellings() -> None:
    client = Conductor()
    async with connected(client) as conn:
        await client.initialize()  # (then `proxy/initialize` again: answered the same)
        init = await conn.agent.proxy_initialize(
            acpu.InitializeProxyRequest(
                protocol_version=1, client_capabilities=client.capabilities()
            )
        )
        assert init.protocol_version == 1 and isinstance(init, acpu.InitializeProxyResponse)
        # Conductor -> proxy: a message from the proxy's successor, request and notification.
        answer = await conn.agent.proxy_successor(
            acpu.ProxySuccessorRequest(method="session/update", params={"sessionId": "s1"})
        )
        assert answer == {
            "handledBy": "proxy",
            "method": "session/update",
            "params": {"sessionId": "s1"},
        }
        await conn.agent.proxy_successor_notification(
            acpu.ProxySuccessorNotification(method="session/cancel", params={"sessionId": "s1"})
        )
        # The `_proxy/*` spellings some conductors send are accepted as the official names.
        again = await conn.agent.call("_proxy/initialize", {"protocolVersion": 1})
        assert again["protocolVersion"] == 1 and "nes" in again["agentCapabilities"]
        echoed = await conn.agent.call("_proxy/successor", {"method": "_x/ping", "params": [1]})
        assert echoed == {"handledBy": "proxy", "method": "_x/ping", "params": [1]}
        await conn.agent.notify("_proxy/successor", {"method": "_x/note"})
        # Proxy -> conductor: forwarded to the successor, in both spellings.
        for spelling in ("proxy/successor", "_proxy/successor"):
            forwarded = await conn.agent.call(
                "_forward",
                {"method": "session/prompt", "params": {"n": spelling}, "spelling": spelling},
            )
            assert forwarded == {"handledBy": "conductor", "method": "session/prompt"}
        assert client.forwarded == [
            ["session/prompt", {"n": "proxy/successor"}],
            ["session/prompt", {"n": "_proxy/successor"}],
        ]
        assert await seen(conn, 7) == [
            ["initialize"],
            ["proxy/initialize", 1],
            ["proxy/successor", "session/update", {"sessionId": "s1"}],
            ["proxy/successor notification", "session/cancel", {"sessionId": "s1"}],
            ["proxy/initialize", 1],
            ["proxy/successor", "_x/ping", [1]],
            ["proxy/successor notification", "_x/note", None],
        ]


async def test_proxy_initialize_is_the_handshake_of_a_proxy() -> None:
    # A conductor opens its connection to a proxy with `proxy/initialize`, not `initialize`:
    # our client may send it first, the agent's runtime takes it as the handshake, and what
    # the proxy advertised there gates the calls that follow.
    client = ClientRuntime()
    async with connected(client) as conn:
        init = await conn.agent.proxy_initialize(
            acpu.InitializeProxyRequest(
                protocol_version=1, client_capabilities=client.capabilities()
            )
        )
        assert isinstance(init.agent_capabilities, nes.AgentCapabilities)
        assert conn.connection.protocol_version == 1
        assert conn.connection.peer_capabilities is init.agent_capabilities
        # gated on what it advertised:
        await conn.agent.nes_start(nes.StartNesRequest(workspace_uri="file:///w"))
        assert await seen(conn, 2) == [["proxy/initialize", 1], ["nes/start", "file:///w"]]


async def test_the_underscore_spelling_of_proxy_initialize_is_a_handshake_too() -> None:
    async with connected(ClientRuntime()) as conn:
        answer = await conn.connection.request("_proxy/initialize", {"protocolVersion": 1})
        assert answer["protocolVersion"] == 1 and "nes" in answer["agentCapabilities"]
        assert await seen(conn, 1) == [["proxy/initialize", 1]]


async def test_proxy_initialize_negotiates_the_version_like_initialize() -> None:
    # A conductor that asks for a newer version gets the proxy's latest (1 here); one that
    # sends no usable version is refused with a clear error, and the proxy keeps serving.
    async with connected(ClientRuntime()) as conn:
        with pytest.raises(RequestError) as bad:
            await conn.connection.request(
                "proxy/initialize", {"protocolVersion": "one"}, check_gate=False
            )
        assert bad.value.code == -32602
        init = await conn.agent.proxy_initialize(acpu.InitializeProxyRequest(protocol_version=7))
        assert init.protocol_version == 1 and conn.connection.protocol_version == 1


async def test_a_malformed_proxy_message_is_refused_clearly() -> None:
    client = Conductor()
    async with connected(client) as conn:
        await client.initialize()
        await conn.agent.proxy_initialize(acpu.InitializeProxyRequest(protocol_version=1))
        for method in ("proxy/successor", "_proxy/successor"):
            with pytest.raises(RequestError) as bad:
                await conn.agent.call(method, {"params": {}})  # no inner method
            assert bad.value.code == -32602
        # Still answering afterwards.
        ok = await conn.agent.call("_proxy/successor", {"method": "m"})
        assert ok["handledBy"] == "proxy"


async def test_proxy_methods_need_an_unstable_connection() -> None:
    async with connected(ClientRuntime(), unstable=False, extensions=()) as conn:
        with pytest.raises(CapabilityError, match="unstable ACP method"):
            await conn.agent.proxy_initialize(acpu.InitializeProxyRequest(protocol_version=1))


async def test_nes_suggestions_over_the_documents_the_client_opened() -> None:
    client = ClientRuntime()
    async with connected(client) as conn:
        init = await client.initialize()
        caps = init.agent_capabilities
        assert isinstance(caps, nes.AgentCapabilities) and caps.nes is not None
        sid = (
            await conn.agent.nes_start(nes.StartNesRequest(workspace_uri="file:///w"))
        ).session_id
        uri = "file:///w/app.py"
        here = nes.Position(line=0, character=1)
        await conn.agent.document_did_open(
            nes.DidOpenDocumentNotification(
                session_id=sid, uri=uri, language_id="python", version=1, text="x = 1\n"
            )
        )
        await conn.agent.document_did_change(
            nes.DidChangeDocumentNotification(
                session_id=sid,
                uri=uri,
                version=2,
                content_changes=[nes.TextDocumentContentChangeEvent(text="x = 2\nprint(x)")],
            )
        )
        await conn.agent.document_did_focus(
            nes.DidFocusDocumentNotification(
                session_id=sid,
                uri=uri,
                version=2,
                position=here,
                visible_range=nes.Range(start=here, end=here),
            )
        )
        await conn.agent.document_did_save(nes.DidSaveDocumentNotification(session_id=sid, uri=uri))
        suggested = await conn.agent.nes_suggest(
            nes.SuggestNesRequest(
                session_id=sid, uri=uri, version=2, position=here, trigger_kind="manual"
            )
        )
        (edit,) = suggested.suggestions
        assert isinstance(edit, nes.NesEditSuggestion) and edit.id == "s1"
        assert edit.edits[0].new_text == "X = 2\nPRINT(X)"
        assert edit.edits[0].range.end == nes.Position(line=1, character=8)
        await conn.agent.nes_accept(nes.AcceptNesNotification(session_id=sid, id="s1"))
        await conn.agent.nes_reject(
            nes.RejectNesNotification(session_id=sid, id="s0", reason="ignored")
        )
        await conn.agent.document_did_close(
            nes.DidCloseDocumentNotification(session_id=sid, uri=uri)
        )
        with pytest.raises(RequestError) as closed:  # bad input: a document it never had
            await conn.agent.nes_suggest(
                nes.SuggestNesRequest(
                    session_id=sid, uri=uri, version=3, position=here, trigger_kind="automatic"
                )
            )
        assert closed.value.code == -32602 and "not open" in closed.value.message
        await conn.agent.nes_close(nes.CloseNesRequest(session_id=sid))
        assert await seen(conn, 12) == [
            ["initialize"],
            ["nes/start", "file:///w"],
            ["document/didOpen", uri, "python", 1],
            ["document/didChange", uri, 2],
            ["document/didFocus", uri, 0],
            ["document/didSave", uri],
            ["nes/suggest", uri, "manual"],
            ["nes/accept", "s1"],
            ["nes/reject", "s0", "ignored"],
            ["document/didClose", uri],
            ["nes/suggest", uri, "automatic"],
            ["nes/close", "nes-1"],
        ]


async def test_nes_calls_follow_what_the_agent_advertised() -> None:
    # An agent that speaks no `nes` extension: the calls fail at once, nothing hangs.
    client = ClientRuntime()
    async with connected(client, "--no-nes") as conn:
        await client.initialize()
        with pytest.raises(RequestError) as missing:
            await conn.agent.nes_start(nes.StartNesRequest())
        assert missing.value.code == -32601
    # A connection without the extension cannot call them at all.
    other = ClientRuntime()
    async with connected(other, extensions=()) as conn:
        await other.initialize()
        with pytest.raises(CapabilityError, match="frozen 'nes' extension"):
            await conn.agent.nes_start(nes.StartNesRequest())
