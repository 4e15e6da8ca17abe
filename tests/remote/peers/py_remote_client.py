"""A remote ACP client on the official Python SDK: `python py_remote_client.py URL`
(http(s):// = `create_http_stream`, ws(s):// = `create_websocket_stream`). Runs in the
SDK's private venv; never imports acpstack.

Scenario: initialize, session/new, prompts "permission" (answers allow), "stream 20", and
"wait" cancelled once its first chunk arrived. Prints one JSON report on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from acp import connect_to_agent
from acp.http.client import create_http_stream
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    RequestPermissionResponse,
    TextContentBlock,
)
from acp.ws.client import create_websocket_stream


class Client:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.permission_requests = 0
        self.first_chunk = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.texts.append(update.content.text)
            self.first_chunk.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.permission_requests += 1
        option = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )


async def main(url: str) -> dict[str, Any]:
    transport = (
        await create_websocket_stream(url) if url.startswith("ws") else create_http_stream(url)
    )
    client = Client()
    conn = connect_to_agent(client, transport)
    report: dict[str, Any] = {"turns": []}
    try:
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="py-remote-client", version="0.12.1"),
        )
        report["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_none=True)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        report["sessionId"] = session.session_id

        def prompt(text: str) -> Any:
            return conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text=text)]
            )

        for text in ("permission", "stream 20"):
            client.texts.clear()
            result = await asyncio.wait_for(prompt(text), 30)
            report["turns"].append(
                {"prompt": text, "stopReason": result.stop_reason, "texts": list(client.texts)}
            )
        client.texts.clear()
        client.first_chunk.clear()
        waiting = asyncio.ensure_future(prompt("wait"))
        await asyncio.wait_for(client.first_chunk.wait(), 30)
        await conn.cancel(session_id=session.session_id)
        result = await asyncio.wait_for(waiting, 30)
        report["turns"].append(
            {"prompt": "wait", "stopReason": result.stop_reason, "texts": list(client.texts)}
        )
        report["permissionRequests"] = client.permission_requests
    finally:
        await conn.close()
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
