"""A v2-only agent that requires a terminal login, as the ACP registry's agents do.

As an agent (first argument `terminal`, the default): it offers a v2 terminal login
method (`--login`, with LOGIN_GREETING in its env, a v2 list of name/value pairs) when
the client advertises `capabilities.auth.terminal`, and its `session/new` answers
auth_required until the marker file ($LOGIN_MARKER) exists. With `unsupported` it offers
only a method of a type no client knows. With `--login` last (the agent's command line
and the method's args): the login program, run by the client in the user's terminal: it
asks for a password on the terminal, and writes the marker when it is "sesame" (else
exits 1).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from acpstack import Agent, RequestError, serve_stdio
from acpstack.schema import v2

MARKER = Path(os.environ["LOGIN_MARKER"])


class NeedsLoginV2(Agent):
    protocol_versions = (2,)

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tasks: set[asyncio.Task[Any]] = set()

    async def v2_initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        caps = params.capabilities
        auth = caps.auth if isinstance(caps, v2.ClientCapabilities) else None
        terminal = isinstance(auth, v2.ClientAuthCapabilities) and isinstance(
            auth.terminal, v2.TerminalAuthCapabilities
        )
        methods: list[v2.AuthMethod] = []
        if self.mode == "terminal" and terminal:
            methods.append(
                v2.AuthMethodTerminal(
                    method_id="terminal-login",
                    name="Log in in the terminal",
                    args=["--login"],
                    env=[v2.EnvVariable(name="LOGIN_GREETING", value="welcome to the v2 login")],
                )
            )
        elif self.mode == "unsupported":
            methods.append({"type": "_carrier_pigeon", "methodId": "pigeon", "name": "Pigeon"})
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name="needs-login-v2", version="1"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
            auth_methods=methods,
        )

    async def v2_auth_login(self, params: v2.LoginAuthRequest) -> v2.LoginAuthResponse:
        # A terminal method is never sent here; the pigeon cannot be done by the agent.
        raise RequestError.invalid_params({"methodId": params.method_id}, "not a login here")

    async def v2_auth_logout(self, params: v2.LogoutAuthRequest) -> v2.LogoutAuthResponse:
        return v2.LogoutAuthResponse()

    async def v2_session_new(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        if not MARKER.exists():
            raise RequestError(-32000, "Authentication required")
        return v2.NewSessionResponse(session_id="logged-in-session")

    async def v2_session_prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        task = asyncio.get_running_loop().create_task(self._answer(params.session_id))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return v2.PromptResponse(message_id="u1")

    async def _answer(self, sid: str) -> None:
        for update in (
            v2.SessionUpdateRunningStateUpdate(),
            v2.AgentMessage(message_id="a1", content=[v2.TextContent(text="hello, v2 user")]),
            v2.SessionUpdateIdleStateUpdate(stop_reason="end_turn"),
        ):
            await self.client.connection.notify(
                "session/update", v2.UpdateSessionNotification(session_id=sid, update=update)
            )


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
    if sys.argv[-1] == "--login":  # the agent's command line, with the method's args
        sys.exit(login())
    serve_stdio(NeedsLoginV2(sys.argv[1] if len(sys.argv) > 1 else "terminal"))
