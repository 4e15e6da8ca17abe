"""An agent that requires a terminal login, as the ACP registry's agents do.

As an agent (no arguments): it offers a terminal login method (`--login`, with
LOGIN_GREETING in its env) when the client advertises `auth.terminal`, and its
`session/new` answers auth_required until the marker file ($LOGIN_MARKER) exists.
As `--login`: the login program, run by the client in the user's terminal: it asks for a
password on the terminal, and writes the marker when it is "sesame" (else exits 1).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from acpstack import Agent, RequestError, serve_stdio
from acpstack.schema import v1 as acp

MARKER = Path(os.environ["LOGIN_MARKER"])


class NeedsLogin(Agent):
    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        caps = params.client_capabilities
        terminal = isinstance(caps, acp.ClientCapabilities) and isinstance(
            caps.auth, acp.AuthCapabilities
        )
        methods: list[acp.AuthMethod] = []
        if terminal and caps.auth.terminal is True:  # type: ignore[union-attr]
            methods.append(
                acp.AuthMethodTerminal(
                    id="terminal-login",
                    name="Log in in the terminal",
                    args=["--login"],
                    env={"LOGIN_GREETING": "welcome to the login"},
                )
            )
        return acp.InitializeResponse(protocol_version=1, auth_methods=methods)

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        if not MARKER.exists():
            raise RequestError(-32000, "Authentication required")
        return acp.NewSessionResponse(session_id="logged-in-session")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        await self.client.session_update(
            params.session_id,
            acp.AgentMessageChunk(content=acp.TextContent(text="hello, logged-in user")),
        )
        return acp.PromptResponse(stop_reason="end_turn")


def login() -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write("the login needs a terminal\n")
        return 2
    print(os.environ.get("LOGIN_GREETING", "(no greeting)"))
    password = input("password: ")
    if password != "sesame":
        print("wrong password")
        return 1
    MARKER.write_text("logged in\n")
    print("login done")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--login"]:
        sys.exit(login())
    serve_stdio(NeedsLogin())
