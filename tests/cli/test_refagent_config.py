"""`acpstack agent` configuration: problems found at startup are one line on stderr and exit
code 2; model failures at prompt time are an agent message and a JSON-RPC error the client
sees (so `acpstack chat -p` exits non-zero). Real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.cli._refagent import needs_api_key
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

AGENT = [sys.executable, "-m", "acpstack", "agent"]

# Runs the acpstack command in a Python where `import httpx` fails, as without the `llm` extra.
WITHOUT_HTTPX = """
import sys
class NoHttpx:
    def find_spec(self, name, path=None, target=None):
        if name == "httpx" or name.startswith("httpx."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoHttpx())
from acpstack.cli import main
sys.exit(main(sys.argv[1:]))
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    args: list[str], tmp_path: Path, *, prefix: list[str] = AGENT, **env: str
) -> subprocess.CompletedProcess[str]:
    """Start the agent with stdin at EOF: a good configuration serves and exits 0 at once."""
    full_env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ACPSTACK_MODEL")
    }
    full_env.update(env)
    return subprocess.run(
        [*prefix, *args, "--store", str(tmp_path / "s.db")],
        env=full_env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("acpstack agent: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_without_the_llm_extra(tmp_path: Path) -> None:
    line = one_line(
        start(
            ["agent", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
            tmp_path,
            prefix=[sys.executable, "-c", WITHOUT_HTTPX],
        )
    )
    assert '"llm" extra' in line and "in the acpstack checkout, pip install '.[llm]'" in line
    assert "acpstack[llm]" not in line  # not on PyPI: that command would fail
    # The scripted agent needs no extra.
    assert start(["agent"], tmp_path, prefix=[sys.executable, "-c", WITHOUT_HTTPX]).returncode == 0


def test_missing_key_names_the_variable(tmp_path: Path) -> None:
    assert "set the OPENAI_API_KEY environment variable" in one_line(
        start(["--model", "gpt-4o"], tmp_path)
    )
    line = one_line(
        start(
            ["--model", "m", "--base-url", "https://llm.example.com/v1", "--api-key-env", "MY_KEY"],
            tmp_path,
            MY_KEY="",
        )
    )
    assert "no API key for https://llm.example.com/v1: set the MY_KEY environment variable" in line


def test_a_key_or_a_local_server_starts(tmp_path: Path) -> None:
    for args, env in [
        (["--model", "m", "--api-key-env", "MY_KEY"], {"MY_KEY": "sk-x"}),
        (["--model", "m", "--base-url", "http://localhost:11434/v1"], {}),
        (["--model", "m", "--base-url", "https://llm.example.com/v1?api_key=k3y"], {}),
        (["--model", "m", "--base-url", "https://u:k3y@llm.example.com/v1"], {}),
    ]:
        result = start(args, tmp_path, **env)
        assert result.returncode == 0 and result.stderr == "", (args, result.stderr)


@pytest.mark.parametrize(
    ("url", "needed"),
    [
        ("https://api.openai.com/v1", True),
        ("http://api.openai.com/v1", True),
        ("https://llm.example.com/v1", True),
        ("http://llm.example.com/v1", False),
        ("https://127.0.0.1:8080/v1", False),
        ("https://[::1]/v1", False),
        ("https://localhost/v1", False),
        ("https://box.localhost/v1", False),
        ("https://llm.example.com/v1?token=t", False),
    ],
)
def test_the_key_rule(url: str, needed: bool) -> None:
    assert needs_api_key(url) is needed


def test_bad_base_url_and_store(tmp_path: Path) -> None:
    line = one_line(start(["--model", "m", "--base-url", "ftp://u:s3cr3t-value@h/v1"], tmp_path))
    assert "--base-url must be an http:// or https:// URL" in line and "s3cr3t-value" not in line
    assert "not a valid URL" in one_line(
        start(["--model", "m", "--base-url", "http://h:port/v1"], tmp_path)
    )
    (tmp_path / "file").write_text("")
    result = subprocess.run(
        [*AGENT, "--store", str(tmp_path / "file" / "s.db")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = one_line(result)
    assert f"cannot open the session store {tmp_path / 'file' / 's.db'}: " in line
    assert "choose another with --store PATH or the ACPSTACK_STORE environment variable" in line


def test_an_unusable_data_directory_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")  # the user data directory cannot be made under a file
    env = {k: v for k, v in os.environ.items() if k != "ACPSTACK_STORE"}
    env["XDG_DATA_HOME"] = str(tmp_path / "file")
    result = subprocess.run(AGENT, env=env, input="", capture_output=True, text=True, timeout=60)
    line = one_line(result)
    default = tmp_path / "file" / "acpstack" / "sessions.sqlite3"
    assert f"cannot open the session store {default} (the default" in line
    assert "Not a directory" in line and "--store PATH" in line and "ACPSTACK_STORE" in line
    env["ACPSTACK_STORE"] = str(tmp_path / "file" / "s.db")
    line = one_line(
        subprocess.run(AGENT, env=env, input="", capture_output=True, text=True, timeout=60)
    )
    assert f"{tmp_path / 'file' / 's.db'} (from ACPSTACK_STORE): " in line
    env["ACPSTACK_STORE"] = ":memory:"  # the way out the line offers works
    done = subprocess.run(AGENT, env=env, input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_context_window_must_be_positive(tmp_path: Path) -> None:
    result = start(["--context-window", "0"], tmp_path)
    assert (
        result.returncode == 2
        and "must be at least 1" in result.stderr
        and "Traceback" not in result.stderr
    )


async def test_unreachable_server_is_an_agent_message_and_an_error(tmp_path: Path) -> None:
    runtime = ClientRuntime()
    command = [
        *AGENT,
        "--model",
        "m",
        "--base-url",
        f"http://127.0.0.1:{closed_port()}/v1",
        "--store",
        str(tmp_path / "s.db"),
    ]
    async with spawn_agent(command, runtime):
        await runtime.initialize()
        sid = (await runtime.new_session(str(tmp_path))).session_id
        with pytest.raises(RequestError) as info:
            await runtime.prompt(sid, "hello")
        message = runtime.sessions[sid].state.last_agent_message
        assert message is not None and "Could not connect to the model server" in message.text
        assert "Check that the server is running and that --base-url is right." in message.text
    assert info.value.code == -32603 and info.value.message.startswith(
        "Model error: Could not connect"
    )
    assert info.value.data == {"reason": "model_error", "kind": "unreachable"}


def test_headless_chat_exits_non_zero(tmp_path: Path) -> None:
    agent = [
        *AGENT,
        "--model",
        "m",
        "--base-url",
        f"http://127.0.0.1:{closed_port()}/v1",
        "--store",
        str(tmp_path / "s.db"),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "acpstack", "chat", "-p", "hello", "--", *agent],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Model error: Could not connect to the model server" in result.stderr


async def agent_capabilities(tmp_path: Path, *flags: str) -> acp.AgentCapabilities:
    runtime = ClientRuntime()
    async with spawn_agent([*AGENT, *flags, "--store", str(tmp_path / "s.db")], runtime):
        init = await runtime.initialize()
    assert isinstance(init.agent_capabilities, acp.AgentCapabilities)
    return init.agent_capabilities


async def test_the_capabilities_follow_the_flags(tmp_path: Path) -> None:
    plain, images = (
        await agent_capabilities(tmp_path),
        await agent_capabilities(tmp_path, "--images"),
    )
    for caps in (plain, images):
        assert isinstance(caps.mcp_capabilities, acp.McpCapabilities)
        assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is True
        assert isinstance(caps.prompt_capabilities, acp.PromptCapabilities)
        assert caps.prompt_capabilities.embedded_context is True
    assert plain.prompt_capabilities.image is False and images.prompt_capabilities.image is True  # type: ignore[union-attr]


def test_the_readme_synopsis_matches_the_command() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[
        readme.index("## Using `acpstack agent` from an editor") : readme.index(
            "## Chatting with any agent"
        )
    ]
    synopsis = section[
        section.index("acpstack agent [") : section.index("```", section.index("acpstack agent ["))
    ]
    flags = {word.strip("[]") for word in synopsis.split() if word.startswith("[--")}
    usage = subprocess.run([*AGENT, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert len(flags) == 7 and all(flag in usage for flag in flags), (flags, usage)
