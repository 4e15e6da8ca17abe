"""A `ClientRuntime` on stdio for the fuzzer, which plays the agent.

It drives the "agent" forever: initialize, session/new, then one prompt after another,
retrying after every error it is allowed to see. Any other exception escapes and ends the
process with a traceback: the fuzzer counts that as a death. Files: the workspace given as
the only argument; terminals off; every permission request rejected.
"""

from __future__ import annotations

import asyncio
import sys

from acpstack import (
    CapabilityError,
    ConnectionClosed,
    ProtocolVersionError,
    RequestError,
    RequestTimeout,
)
from acpstack.client import ClientRuntime, DenyAll, connect_client
from acpstack.transports import open_stdio_transport

EXPECTED = (RequestError, RequestTimeout, ProtocolVersionError, CapabilityError)


async def drive(runtime: ClientRuntime, workspace: str) -> None:
    session_id: str | None = None
    while True:
        try:
            if runtime.agent.initialize_result is None:
                await runtime.initialize(timeout=30)
            elif session_id is None:
                session_id = (await runtime.new_session(workspace)).session_id
            else:
                await runtime.prompt(session_id, "go", timeout=30)
        except EXPECTED:
            await asyncio.sleep(0)
        except ConnectionClosed:
            return


async def main(workspace: str) -> None:
    runtime = ClientRuntime(permission_policy=DenyAll(), enable_terminal=False)
    conn = connect_client(runtime, await open_stdio_transport())
    async with conn.connection:
        await drive(runtime, workspace)


if __name__ == "__main__":
    from acpstack import run

    run(main(sys.argv[1]))
