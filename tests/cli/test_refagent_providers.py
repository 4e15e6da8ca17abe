"""`acpstack agent --model ... --unstable` (a real process) offers its model settings as ACP
providers and puts the client's system prompt in the model's system message; checked
against fake OpenAI-compatible servers on 127.0.0.1, with the wire and the agent's stderr
captured to show that no credential ever leaves the agent."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpstack import CapabilityError, RequestError, spawn_agent
from acpstack.cli._tap import TapTransport
from acpstack.client import ClientRuntime, connect_client
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu
from acpstack.transports import SubprocessTransport

sys.path.insert(0, str(Path(__file__).parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

pytestmark = pytest.mark.timeout(60)
ENV_KEY = "sk-env-key-0123456789"
CLIENT_KEY = "client-key-456789"
URL_PASSWORD = "url-pass-97531"
QUERY_KEY = "qk-24680-secret"


@asynccontextmanager
async def agent(
    tmp_path: Path, base_url: str, runtime: ClientRuntime, *extra: str
) -> AsyncIterator[list[str]]:
    """The agent with the LLM brain on `base_url`, its stderr in tmp_path/agent.stderr; yields
    the wire as it goes (one JSON text per message, both directions)."""
    command = [
        "sh",
        "-c",
        'exec "$@" 2>>"$AGENT_STDERR"',
        "sh",
        *agent_command(base_url, str(tmp_path / "store.sqlite3"), "--unstable", *extra),
    ]
    env = {"FAKE_KEY": ENV_KEY, "AGENT_STDERR": str(tmp_path / "agent.stderr")}
    transport = await SubprocessTransport.spawn(command, env=env)
    wire: list[str] = []
    conn = connect_client(
        runtime,
        TapTransport(transport, lambda record: wire.append(json.dumps(record))),
        unstable=True,
    )
    async with conn.connection:
        yield wire


def current(providers: acpu.ListProvidersResponse) -> Any:
    (main,) = providers.providers
    assert main.provider_id == "main" and main.supported == ["openai"] and main.required is False
    return main.current


async def test_providers_list_set_and_disable_route_the_model_and_echo_no_secret(
    tmp_path: Path,
) -> None:
    runtime = ClientRuntime()
    with FakeOpenAI() as first, FakeOpenAI() as second:
        async with agent(tmp_path, first.url, runtime) as wire:
            init = await runtime.initialize()
            assert init.agent_capabilities.providers is not None  # type: ignore[union-attr]
            sid = (await runtime.new_session(str(tmp_path))).session_id
            assert current(await runtime.agent.providers_list()).base_url == first.url
            await runtime.prompt(sid, "one")
            assert first.auth_headers == [f"Bearer {ENV_KEY}"]

            # The client routes the model elsewhere, with its own credentials.
            url = f"http://ada:{URL_PASSWORD}@127.0.0.1:{second.port}/v1?api_key={QUERY_KEY}"
            headers = {"X-Api-Key": CLIENT_KEY, "X-Route": "eu"}
            await runtime.agent.providers_set(
                acpu.SetProviderRequest(
                    provider_id="main", api_type="openai", base_url=url, headers=headers
                )
            )
            shown = current(await runtime.agent.providers_list())
            assert shown.api_type == "openai"
            assert shown.base_url == f"http://***@127.0.0.1:{second.port}/v1?api_key=***"
            await runtime.prompt(sid, "two")
            sent = second.headers[0]
            assert sent["x-api-key"] == CLIENT_KEY and sent["x-route"] == "eu"
            userinfo = base64.b64encode(f"ada:{URL_PASSWORD}".encode()).decode()
            assert sent["authorization"] == f"Basic {userinfo}"  # from the URL, not our key
            assert second.paths == [f"/v1/chat/completions?api_key={QUERY_KEY}"]
            assert len(first.requests) == 1  # the env key went nowhere new

            # A failure that echoes the client's key: the user sees why, not the key.
            second.scripts.append(
                [("status", 401, json.dumps({"error": {"message": f"bad key {CLIENT_KEY}"}}))]
            )
            with pytest.raises(RequestError) as refused:
                await runtime.prompt(sid, "three")
            assert refused.value.data["kind"] == "unauthorized"
            assert "bad key ***" in refused.value.message

            # Disabled: turns end at once with what to do, and nothing reaches a server.
            await runtime.agent.providers_disable(acpu.DisableProviderRequest(provider_id="main"))
            assert current(await runtime.agent.providers_list()) is None
            with pytest.raises(RequestError) as disabled:
                await runtime.prompt(sid, "four")
            assert disabled.value.data == {"reason": "model_error", "kind": "disabled"}
            assert "providers/set" in disabled.value.message
            assert len(second.requests) == 2
            await runtime.agent.providers_set(
                acpu.SetProviderRequest(provider_id="main", api_type="openai", base_url=first.url)
            )
            await runtime.prompt(sid, "five")
            assert first.auth_headers == [f"Bearer {ENV_KEY}", None]  # only what the client set
    everything = "\n".join(wire) + (tmp_path / "agent.stderr").read_text()
    everything += "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("store*"))
    assert "bad key ***" in everything
    for secret in (CLIENT_KEY, URL_PASSWORD, QUERY_KEY):
        # Only in what the client itself sent (providers/set), never in what the agent said.
        said = [line for line in wire if secret in line]
        assert all('"method": "providers/set"' in line for line in said), said
        assert secret not in (tmp_path / "agent.stderr").read_text()
    assert ENV_KEY not in everything


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        ({"provider_id": "other"}, -32602, "Unknown provider 'other'"),
        ({"api_type": "anthropic"}, -32602, "Unsupported API type 'anthropic'"),
        ({"base_url": "ftp://host/v1"}, -32602, "baseUrl must be an http:// or https:// URL"),
        ({"base_url": "http://[::1/v1"}, -32602, "baseUrl is not a valid URL"),
        ({"headers": {"Bad Name": "x"}}, -32602, "Invalid HTTP header 'Bad Name'"),
        ({"headers": {"X-Ok": "a\r\nX-Injected: b"}}, -32602, "Invalid HTTP header 'X-Ok'"),
    ],
)
async def test_bad_provider_settings_are_refused_and_change_nothing(
    tmp_path: Path, change: dict[str, Any], code: int, message: str
) -> None:
    runtime = ClientRuntime()
    with FakeOpenAI() as fake:
        async with agent(tmp_path, fake.url, runtime):
            await runtime.initialize()
            fields = {"provider_id": "main", "api_type": "openai", "base_url": "http://x/v1"}
            with pytest.raises(RequestError) as bad:
                await runtime.agent.providers_set(acpu.SetProviderRequest(**{**fields, **change}))
            assert bad.value.code == code and message in bad.value.message
            assert current(await runtime.agent.providers_list()).base_url == fake.url
            with pytest.raises(RequestError) as unknown:
                await runtime.agent.providers_disable(
                    acpu.DisableProviderRequest(provider_id="other")
                )
            assert unknown.value.code == -32602
            sid = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(sid, "still works")
            assert fake.auth_headers == [f"Bearer {ENV_KEY}"]


async def test_the_scripted_agent_offers_no_providers(tmp_path: Path) -> None:
    runtime = ClientRuntime()
    command = [sys.executable, "-m", "acpstack", "agent", "--unstable", "--store", "s.sqlite3"]
    async with spawn_agent(command, runtime, unstable=True, cwd=tmp_path):
        init = await runtime.initialize()
        assert init.agent_capabilities.providers in (None, acp.UNSET)  # type: ignore[union-attr,attr-defined]
        with pytest.raises(CapabilityError, match="providers"):
            await runtime.agent.providers_list()


async def test_the_client_system_prompt_is_appended_to_the_model_system_message(
    tmp_path: Path,
) -> None:
    prompt = acpu.SystemPrompt(
        mode="append",
        content=[acp.TextContent(text="Answer in French."), acp.TextContent(text="Be brief.")],
    )
    with FakeOpenAI() as fake:
        runtime = ClientRuntime()
        async with agent(tmp_path, fake.url, runtime):
            await runtime.initialize()
            new = acpu.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[], system_prompt=prompt)
            sid = (await runtime.agent.session_new(new)).session_id
            runtime.register_session(sid, str(tmp_path))
            await runtime.prompt(sid, "hello")
            other = (await runtime.new_session(str(tmp_path))).session_id
            await runtime.prompt(other, "hello")
            override = acpu.SystemPrompt(mode="override", content=[acp.TextContent(text="x")])
            with pytest.raises(RequestError) as refused:
                await runtime.agent.session_new(
                    acpu.NewSessionRequest(
                        cwd=str(tmp_path), mcp_servers=[], system_prompt=override
                    )
                )
            assert refused.value.code == -32602 and "override" in refused.value.message
        # Stored with the session: a new agent process loading it uses it again.
        again = ClientRuntime()
        async with agent(tmp_path, fake.url, again):
            await again.initialize()
            await again.load_session(sid, str(tmp_path))
            await again.prompt(sid, "again")
    own, appended = fake.requests[0]["messages"][0]["content"].split("\n\n", 1)
    assert own.startswith("You are a coding agent") and str(tmp_path) in own
    assert appended == "Answer in French.\n\nBe brief."
    assert fake.requests[1]["messages"][0]["content"] == own  # a session without one
    assert fake.requests[2]["messages"][0]["content"].endswith("\n\nAnswer in French.\n\nBe brief.")
