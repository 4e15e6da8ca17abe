"""`ClientRuntime`'s terminal login on protocol v2, against a real v2-only agent process
(tests/v2/peers/login_agent_v2.py): `run_terminal_login` advertises v2's
`capabilities.auth.terminal`, the agent's terminal method reaches it in the model's shape
(v2's `methodId` as `id`, its name/value `env` as a mapping), and it is never sent to
`auth/login`; without it nothing is advertised and the agent offers no terminal method."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

pytestmark = pytest.mark.timeout(60, func_only=True)
PEER = [sys.executable, str(Path(__file__).resolve().parent / "peers" / "login_agent_v2.py")]


async def test_a_terminal_login_on_v2(tmp_path: Path) -> None:
    marker = tmp_path / "logged-in"
    chosen: list[list[acp.AuthMethod]] = []
    logins: list[acp.AuthMethodTerminal] = []

    async def choose(methods: list[acp.AuthMethod]) -> str | None:
        chosen.append(methods)
        return methods[0].id

    async def login(method: acp.AuthMethodTerminal) -> bool:
        logins.append(method)
        marker.write_text("logged in\n")  # what the user's login in the terminal does
        return True

    runtime = ClientRuntime(choose_auth_method=choose, run_terminal_login=login)
    env = {**os.environ, "LOGIN_MARKER": str(marker)}
    async with spawn_agent([*PEER, "terminal"], runtime, env=env):
        init = await runtime.initialize()
        assert runtime.agent.protocol_version == 2
        assert init.auth_methods == [
            acp.AuthMethodTerminal(
                id="terminal-login",
                name="Log in in the terminal",
                args=["--login"],
                env={"LOGIN_GREETING": "welcome to the v2 login"},
            )
        ]
        # The agent's auth/login refuses every method: the session comes from the login.
        session = await runtime.new_session(str(tmp_path))
    assert session.session_id == "logged-in-session"
    assert len(chosen) == 1 and logins == init.auth_methods


async def test_no_terminal_login_is_offered_unless_advertised(tmp_path: Path) -> None:
    asked: list[list[acp.AuthMethod]] = []

    async def choose(methods: list[acp.AuthMethod]) -> str | None:
        asked.append(methods)
        return None

    runtime = ClientRuntime(choose_auth_method=choose)
    env = {**os.environ, "LOGIN_MARKER": str(tmp_path / "logged-in")}
    async with spawn_agent([*PEER, "terminal"], runtime, env=env):
        init = await runtime.initialize()
        assert runtime.agent.protocol_version == 2 and init.auth_methods == []
        with pytest.raises(RequestError) as raised:
            await runtime.new_session(str(tmp_path))
    assert raised.value.code == -32000 and asked == []
