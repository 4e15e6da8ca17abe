"""An agent on stdio for the proxy-chain methods and the frozen `nes` extension: connected
with unstable=True and extensions=("nes",) (`--no-nes`: without the extension).

- `initialize` / `proxy/initialize`: the same answer (with the `nes` capabilities); which
  one came is recorded (a conductor sends `proxy/initialize` to a proxy).
- `proxy/successor` from the client (a message from this proxy's successor): recorded and
  answered `{"handledBy": "proxy", "method", "params"}`; notifications recorded.
- `nes/start|suggest|accept|reject|close` and `document/*`: a tiny edit-suggestion engine
  over the documents the client opened: a suggestion upper-cases the whole document.
- `_seen {"count": N}`: the recorded events once there are N of them.
- `_forward {"method", "params", "spelling"}`: send `proxy/successor` to the client (this
  proxy forwarding a request to its successor), as `proxy/successor` or as `_proxy/successor`,
  and answer with what came back.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from msgspec import UNSET

from acpstack import RequestError, run
from acpstack.agent import Agent, connect_agent
from acpstack.schema import v1_nes as nes
from acpstack.schema import v1_unstable as acpu
from acpstack.transports import open_stdio_transport


class ProxyNesAgent(Agent):
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.recorded = asyncio.Condition()
        self.documents: dict[str, str] = {}

    async def record(self, event: Any) -> None:
        async with self.recorded:
            self.events.append(event)
            self.recorded.notify_all()

    def answer(self) -> nes.InitializeResponse:
        document = nes.NesDocumentEventCapabilities(
            did_open=nes.NesDocumentDidOpenCapabilities(),
            did_change=nes.NesDocumentDidChangeCapabilities(sync_kind="full"),
            did_close=nes.NesDocumentDidCloseCapabilities(),
            did_save=nes.NesDocumentDidSaveCapabilities(),
            did_focus=nes.NesDocumentDidFocusCapabilities(),
        )
        caps = nes.AgentCapabilities(
            nes=nes.NesCapabilities(events=nes.NesEventCapabilities(document=document))
        )
        return nes.InitializeResponse(protocol_version=1, agent_capabilities=caps)

    async def initialize(self, params: Any) -> Any:
        await self.record(["initialize"])
        return self.answer()

    async def proxy_initialize(self, params: Any) -> Any:
        await self.record(["proxy/initialize", params.protocol_version])
        return self.answer()

    async def proxy_successor(self, params: acpu.ProxySuccessorRequest) -> Any:
        inner = None if params.params is UNSET else params.params
        await self.record(["proxy/successor", params.method, inner])
        return {"handledBy": "proxy", "method": params.method, "params": inner}

    async def proxy_successor_notification(self, params: acpu.ProxySuccessorNotification) -> None:
        inner = None if params.params is UNSET else params.params
        await self.record(["proxy/successor notification", params.method, inner])

    async def nes_start(self, params: nes.StartNesRequest) -> nes.StartNesResponse:
        await self.record(["nes/start", params.workspace_uri])
        return nes.StartNesResponse(session_id="nes-1")

    async def document_did_open(self, params: nes.DidOpenDocumentNotification) -> None:
        self.documents[params.uri] = params.text
        await self.record(["document/didOpen", params.uri, params.language_id, params.version])

    async def document_did_change(self, params: nes.DidChangeDocumentNotification) -> None:
        self.documents[params.uri] = params.content_changes[-1].text  # full sync
        await self.record(["document/didChange", params.uri, params.version])

    async def document_did_save(self, params: nes.DidSaveDocumentNotification) -> None:
        await self.record(["document/didSave", params.uri])

    async def document_did_focus(self, params: nes.DidFocusDocumentNotification) -> None:
        await self.record(["document/didFocus", params.uri, params.position.line])

    async def document_did_close(self, params: nes.DidCloseDocumentNotification) -> None:
        self.documents.pop(params.uri, None)
        await self.record(["document/didClose", params.uri])

    async def nes_suggest(self, params: nes.SuggestNesRequest) -> nes.SuggestNesResponse:
        await self.record(["nes/suggest", params.uri, params.trigger_kind])
        text = self.documents.get(params.uri)
        if text is None:
            raise RequestError.invalid_params({"uri": params.uri}, "document is not open")
        lines = text.split("\n")
        whole = nes.Range(
            start=nes.Position(line=0, character=0),
            end=nes.Position(line=len(lines) - 1, character=len(lines[-1])),
        )
        edit = nes.NesEditSuggestion(
            id="s1", uri=params.uri, edits=[nes.NesTextEdit(range=whole, new_text=text.upper())]
        )
        return nes.SuggestNesResponse(suggestions=[edit])

    async def nes_accept(self, params: nes.AcceptNesNotification) -> None:
        await self.record(["nes/accept", params.id])

    async def nes_reject(self, params: nes.RejectNesNotification) -> None:
        await self.record(["nes/reject", params.id, params.reason])

    async def nes_close(self, params: nes.CloseNesRequest) -> nes.CloseNesResponse:
        await self.record(["nes/close", params.session_id])
        return nes.CloseNesResponse()

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_seen":
            async with self.recorded:
                await asyncio.wait_for(
                    self.recorded.wait_for(lambda: len(self.events) >= params["count"]), 10
                )
                return self.events
        if method == "_forward":
            inner = {"method": params["method"], "params": params["params"]}
            if params["spelling"] == "_proxy/successor":
                return await self.client.connection.request("_proxy/successor", inner)
            return await self.client.proxy_successor(acpu.ProxySuccessorRequest(**inner))
        raise RequestError.method_not_found(method)


async def main() -> None:
    extensions = () if "--no-nes" in sys.argv else ("nes",)
    transport = await open_stdio_transport()
    connection = connect_agent(ProxyNesAgent(), transport, unstable=True, extensions=extensions)
    async with connection:
        await connection.wait_closed()


if __name__ == "__main__":
    run(main())
