"""An API key never leaks: every failure path x every key source, checked in what the client
receives (the wire, captured), in the SQLite store (its bytes) and in the agent's stderr; and
the commands the agent runs neither inherit the key nor show it (run by the agent itself or
in a client terminal), checked in the tool calls, the store and the model's requests."""

from __future__ import annotations

import base64
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.cli._tap import TapTransport
from acpstack.client import ClientRuntime, connect_client
from acpstack.schema import v1 as acp
from acpstack.transports import SubprocessTransport

sys.path.insert(0, str(Path(__file__).parent))
from tests_cli_fake import FakeOpenAI, agent_command  # noqa: E402

SOURCES = ["env", "userinfo", "query"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def endpoint(source: str, port: int, key: str) -> tuple[str, dict[str, str]]:
    """The base URL and environment that give the agent `key` from `source`."""
    if source == "env":
        return f"http://127.0.0.1:{port}/v1", {"FAKE_KEY": key}
    if source == "userinfo":
        return f"http://ada:{key}@127.0.0.1:{port}/v1", {"FAKE_KEY": ""}
    return f"http://127.0.0.1:{port}/v1?api_key={key}", {"FAKE_KEY": ""}


async def run_prompts(
    tmp_path: Path, base_url: str, env: dict[str, str], prompts: int
) -> tuple[str, list[RequestError], str]:
    """Run `acpstack agent`, send `prompts` prompts that all fail; return the wire, the errors, stderr."""
    stderr_file = tmp_path / "agent.stderr"
    command = [
        "sh",
        "-c",
        'exec "$@" 2>>"$AGENT_STDERR"',
        "sh",
        *agent_command(base_url, str(tmp_path / "store.sqlite3")),
    ]
    wire: list[str] = []
    errors: list[RequestError] = []
    transport = await SubprocessTransport.spawn(
        command, env={**env, "AGENT_STDERR": str(stderr_file)}
    )
    runtime = ClientRuntime()
    conn = connect_client(
        runtime, TapTransport(transport, lambda record: wire.append(json.dumps(record)))
    )
    async with conn.connection:
        await runtime.initialize()
        sid = (await runtime.new_session(str(tmp_path))).session_id
        for n in range(prompts):
            with pytest.raises(RequestError) as info:
                await runtime.prompt(sid, f"prompt {n}")
            errors.append(info.value)
    return "\n".join(wire), errors, stderr_file.read_text()


def store_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))


def forms(key: str) -> list[str]:
    return [key, base64.b64encode(f"ada:{key}".encode()).decode()]


def assert_nowhere(
    key: str, wire: str, errors: list[RequestError], stderr: str, stored: bytes
) -> None:
    for form in forms(key):
        assert form not in wire
        assert all(form not in e.message and form not in json.dumps(e.data) for e in errors)
        assert form not in stderr
        assert form.encode() not in stored


@pytest.mark.parametrize("source", SOURCES)
async def test_connection_refused(tmp_path: Path, source: str) -> None:
    key = f"sk-{source}-refused-0123456789"
    base_url, env = endpoint(source, closed_port(), key)
    wire, errors, stderr = await run_prompts(tmp_path, base_url, env, 1)
    assert errors[0].data["kind"] == "unreachable" and "Could not connect" in errors[0].message
    assert (
        "Could not connect" in wire
        and "model request failed" in stderr
        and b"Could not connect" in store_bytes(tmp_path)
    )
    assert_nowhere(key, wire, errors, stderr, store_bytes(tmp_path))


@pytest.mark.parametrize("source", SOURCES)
async def test_server_answers_that_echo_the_key(tmp_path: Path, source: str) -> None:
    key = f"sk-{source}-echo-0123456789"
    with FakeOpenAI() as fake:
        base_url, env = endpoint(source, fake.port, key)
        fake.scripts += [
            [
                (
                    "status",
                    401,
                    json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}),
                )
            ],  # a 401 echoing the key
            [
                ("raw", "text/event-stream", f"data: {{not json, key={key}\n\n")
            ],  # garbage in the stream
            [
                ("raw", "text/html", f"<html>proxy error for {key}</html>")
            ],  # garbage instead of a stream
            [("text", "Half an ans"), ("drop",)],  # the server goes away mid-stream
        ]
        wire, errors, stderr = await run_prompts(tmp_path, base_url, env, 4)
        sent: dict[str, Any] = {
            "env": fake.auth_headers[0],
            "userinfo": fake.auth_headers[0],
            "query": fake.paths[0],
        }
    assert key in (
        base64.b64decode(sent[source][6:]).decode() if source == "userinfo" else sent[source]
    )  # the key was used
    assert [e.data["kind"] for e in errors] == [
        "unauthorized",
        "bad_response",
        "bad_response",
        "disconnected",
    ]
    assert [e.data.get("status") for e in errors] == [401, None, None, None]
    assert (
        "HTTP 401" in wire
        and "Incorrect API key provided" in wire
        and "broke in the middle" in wire
    )
    assert_nowhere(key, wire, errors, stderr, store_bytes(tmp_path))


# -- commands: the key is not in their environment, and masked in their output ----------


@pytest.mark.parametrize("terminal", [False, True], ids=["agent-runs-them", "client-terminal"])
async def test_commands_neither_inherit_nor_show_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    key = "sk-envleak-0123456789"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "key.txt").write_text(f"token {key}\n")  # the key can reach output other ways
    if terminal:  # the client's commands have the key: an editor started both with it
        monkeypatch.setenv("FAKE_KEY", key)
    calls = [
        ("run_command", {"command": "printenv", "args": ["FAKE_KEY"]}),
        ("run_command", {"command": "env"}),
        ("run_command", {"command": "cat", "args": ["key.txt"]}),
        ("search_files", {"pattern": "envleak"}),
    ]
    updates: list[Any] = []
    stderr: list[str] = []

    async def allow(request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        return next(o for o in request.options if o.kind == "allow_once")

    with FakeOpenAI() as fake:
        fake.scripts += [
            [
                *[("tool", i, f"c{i}", n, [json.dumps(a)]) for i, (n, a) in enumerate(calls)],
                ("finish", "tool_calls"),
            ],
            [("text", "ok"), ("finish", "stop")],
        ]
        client = ClientRuntime(
            ask=allow,
            on_update=lambda sid, update: updates.append(update),
            enable_terminal=terminal,
        )
        command = agent_command(fake.url, str(tmp_path / "store.sqlite3"))
        async with spawn_agent(
            command, client, env={"FAKE_KEY": key}, stderr_callback=stderr.append
        ):
            await client.initialize()
            sid = (await client.new_session(str(ws))).session_id
            assert (await client.prompt(sid, "show env")).stop_reason == "end_turn"
            tools = list(client.sessions[sid].state.tool_calls.values())
        assert fake.auth_headers[0] == f"Bearer {key}"  # the agent still has its key
        sent = json.dumps(fake.requests)
        results = {
            m["tool_call_id"]: m["content"]
            for m in fake.requests[1]["messages"]
            if m["role"] == "tool"
        }
    if terminal:  # the client's command printed the key: the agent masks it
        assert results["c0"] == "exit code 0\n***\n"
        assert "\nFAKE_KEY=***\n" in results["c1"]
    else:  # the agent's own commands never had it
        assert results["c0"].startswith("exit code 1"), results["c0"]
        assert "FAKE_KEY" not in results["c1"] and "PATH=" in results["c1"]
    assert results["c2"] == "exit code 0\ntoken ***\n"
    assert results["c3"] == f"{ws / 'key.txt'}:1:token ***\n"
    statuses = ["completed"] * 4 if terminal else ["failed", *["completed"] * 3]
    assert [t.status for t in tools] == statuses  # printenv fails without the variable
    shown = repr(updates)
    assert "token ***" in shown  # the output shown in the tool calls, masked
    assert key not in shown and key not in sent and key not in "\n".join(stderr)
    assert key.encode() not in store_bytes(tmp_path)


def test_serve_hosts_the_reference_agent_without_the_key_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `acpstack serve` runs the reference agent in its own process: its commands inherit
    # that process's environment, so the key leaves it there too.
    import argparse
    import os

    from acpstack.cli._serve import _reference_agent

    monkeypatch.setenv("MY_KEY", "sk-serve-0123456789")
    args = argparse.Namespace(
        store=str(tmp_path / "s.db"),
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="MY_KEY",
    )
    stores: list[Any] = []
    try:
        agent = _reference_agent(args, stores)()
        assert "MY_KEY" not in os.environ
        assert agent.brain.headers == {"Authorization": "Bearer sk-serve-0123456789"}
        assert agent.brain.api_key_env == "MY_KEY"  # named in its hints
    finally:
        for store in stores:
            store.close()
