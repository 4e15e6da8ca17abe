"""`acpstack serve` as users run it (a subprocess, real requests on 127.0.0.1): the
security defaults, one agent process per connection with none left behind, TLS, and
`acpstack chat --url` over both profiles."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets
from _probe import INIT, Probe
from _serving import SCRIPTED, STDIO_AGENT, alive, serve_process

# The chat's input prompt as prompt_toolkit draws it on a pexpect terminal.
PROMPT = r"(?:\x1b\[[0-9;?]*[a-zA-Z])*>(?:\x08|\x1b\[[0-9;?]*[a-zA-Z]| )"

pytestmark = pytest.mark.timeout(60)
TOKEN = "tok-8f2c1e0b9d"


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    with serve_process("--host", "0.0.0.0", wait=False) as served:
        assert served.proc.wait(timeout=20) == 2
    assert "without a token" in "".join(served.stderr)
    with serve_process("--token-env", "ACPSTACK_TEST_NO_SUCH_VAR", wait=False) as served:
        assert served.proc.wait(timeout=20) == 2
    assert "empty or not set" in "".join(served.stderr)


def test_a_non_loopback_bind_with_a_token_serves_and_needs_the_token() -> None:
    with serve_process(
        "--host",
        "0.0.0.0",
        "--token-env",
        "ACP_TOKEN",
        "--agent",
        SCRIPTED,
        env={"ACP_TOKEN": TOKEN},
    ) as served:
        url = f"http://127.0.0.1:{served.port}/acp"
        assert httpx.post(url, json=INIT).status_code == 401
        assert (
            httpx.post(url, json=INIT, headers={"Authorization": f"Bearer {TOKEN}"}).status_code
            == 200
        )
    assert TOKEN not in "".join(served.stderr)


async def test_token_origin_and_host_checks_with_real_requests() -> None:
    with serve_process(
        "--token-env",
        "ACP_TOKEN",
        "--agent",
        SCRIPTED,
        "--allow-origin",
        "https://editor.example",
        "-v",
        env={"ACP_TOKEN": TOKEN},
    ) as served:
        url = served.url
        async with httpx.AsyncClient() as http:
            assert (await http.post(url, json=INIT)).status_code == 401
            assert (
                await http.post(url, json=INIT, headers={"Authorization": "Bearer nope"})
            ).status_code == 401
            assert (
                await http.post(url, json=INIT, headers={"Authorization": f"Bearer {TOKEN}"})
            ).status_code == 200
            assert (
                await http.post(url, json=INIT, headers={"X-Secret-Key": TOKEN})
            ).status_code == 200
            assert (await http.post(url + f"?token={TOKEN}", json=INIT)).status_code == 200
            auth = {"X-Secret-Key": TOKEN}
            evil = await http.post(
                url, json=INIT, headers={**auth, "Origin": "http://evil.example"}
            )
            assert evil.status_code == 403
            allowed = await http.post(
                url, json=INIT, headers={**auth, "Origin": "https://editor.example"}
            )
            assert (
                allowed.status_code == 200
                and allowed.headers["access-control-allow-origin"] == "https://editor.example"
            )
            assert "acp-connection-id" in allowed.headers["access-control-expose-headers"].lower()
            local = await http.post(
                url, json=INIT, headers={**auth, "Origin": "http://localhost:3000"}
            )
            assert local.status_code == 200
            rebound = await http.post(
                url, json=INIT, headers={**auth, "Host": f"attacker.example:{served.port}"}
            )
            assert (
                rebound.status_code == 421
            )  # DNS rebinding: a name that resolves to us, not one we answer to
            preflight = await http.options(
                url,
                headers={
                    "Origin": "https://editor.example",
                    "Access-Control-Request-Method": "POST",
                },
            )
            assert (
                preflight.status_code == 204
                and "Acp-Session-Id" in preflight.headers["access-control-allow-headers"]
            )
            assert (
                await http.options(url, headers={"Origin": "http://evil.example"})
            ).status_code == 403
        ws_url = "ws" + url[4:]
        rebound_url = (
            f"ws://attacker.example:{served.port}/acp"  # the socket still goes to 127.0.0.1
        )
        for target, headers, status in (
            (ws_url, {}, 401),
            (ws_url, {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}, 403),
            (rebound_url, {"Authorization": f"Bearer {TOKEN}"}, 421),
        ):
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(
                    target, additional_headers=headers, host="127.0.0.1", port=served.port
                ):
                    pass
            assert refused.value.response.status_code == status
        async with websockets.connect(
            ws_url + f"?token={TOKEN}", origin="https://editor.example"
        ) as ws:  # type: ignore[arg-type]
            assert ws.response.headers["Acp-Connection-Id"]
    assert TOKEN not in "".join(served.stderr), "the token must never be logged"


@pytest.fixture
def own_user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chats these tests start keep their records and history in the test's folder."""
    for variable in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(variable, str(tmp_path / "user" / variable.lower()))


@pytest.mark.usefixtures("own_user_dirs")
def test_chat_url_completes_a_turn_with_permission_prompts_over_both_profiles(
    tmp_path: Path,
) -> None:
    (tmp_path / "README.md").write_text("# project\n")
    with serve_process("--store", str(tmp_path / "sessions.db")) as served:  # the reference agent
        for scheme in ("http", "ws"):
            url = scheme + served.url[4:]
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "acpstack",
                    "chat",
                    "--url",
                    url,
                    "--cwd",
                    str(tmp_path),
                    "-p",
                    "tidy up",
                    "--approve-all",
                ],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 0, done.stderr
            assert "permission: approved 'Edit README.md' (--approve-all)" in done.stderr
            assert "Done." in done.stdout
        denied = subprocess.run(
            [
                sys.executable,
                "-m",
                "acpstack",
                "chat",
                "--url",
                served.url,
                "--cwd",
                str(tmp_path),
                "-p",
                "tidy up",
                "--deny-all",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert denied.returncode == 5  # every permission request was denied
        assert "rejected 'Edit README.md' (--deny-all)" in denied.stderr
    assert (tmp_path / "README.md").read_text().count("tidy up") == 2  # approved twice, denied once


@pytest.mark.usefixtures("own_user_dirs")
def test_chat_url_errors_are_clear() -> None:
    for url, text, code in (
        ("http://127.0.0.1:9/acp", "could not reach", 1),
        ("ws://127.0.0.1:9/acp", "could not open a WebSocket", 1),
        ("ftp://x/acp", "http(s)://", 2),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "acpstack", "chat", "--url", url, "-p", "hi"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == code and text in done.stderr, (url, done.stderr)
        assert "Traceback" not in done.stderr


async def test_every_agent_process_ends_with_its_connection(tmp_path: Path) -> None:
    pids_dir = tmp_path / "pids"
    pids_dir.mkdir()
    # 6 s: each connection starts an agent process, and on a loaded machine setting up the
    # second one took over 2 s, long enough for the first to reach its idle timeout.
    idle = ("--idle-timeout", "6")
    with serve_process(*idle, "--", *STDIO_AGENT, env={"ACP_TEST_PIDS": str(pids_dir)}) as served:
        deleted, dropped, kept = Probe(served.url), Probe(served.url), Probe(served.url)
        await kept.initialize()
        # The kept connection holds its stream open from the start: a slow machine must
        # never let it reach the idle timeout while the others are being set up.
        async with kept.stream():
            for probe in (deleted, dropped):
                await probe.initialize()
            pids = sorted(int(p.name) for p in pids_dir.iterdir())
            assert len(pids) == 3 and all(alive(p) for p in pids)
            await deleted.http.delete(
                served.url, headers={"Acp-Connection-Id": deleted.connection_id}
            )
            await dropped.aclose()  # gone without DELETE: the idle timeout ends it
            await _wait_for(lambda: sum(alive(p) for p in pids) == 1, 30)
        assert served.stop() == 0  # SIGTERM with a connection still open: drained, exits 0
        await _wait_for(lambda: not any(alive(p) for p in pids), 15)
        for probe in (deleted, kept):
            await probe.aclose()


async def test_tls(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    import ssl

    from acpstack.client import ClientRuntime, connect_remote

    context = ssl.create_default_context(cafile=str(cert))
    with serve_process(
        "--tls-cert", str(cert), "--tls-key", str(key), "--agent", SCRIPTED
    ) as served:
        assert served.url.startswith("https://")
        for url in (served.url, "wss" + served.url[5:]):
            runtime = ClientRuntime()
            async with connect_remote(url, runtime, ssl_context=context):
                await runtime.initialize()
                session = await runtime.new_session("/tmp")
                assert (await runtime.prompt(session.session_id, "hello")).stop_reason == "end_turn"


async def _wait_for(condition: object, timeout: float) -> None:
    """Poll a condition about other processes (there is no event to wait on for their exit)."""
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.05)


def test_serve_without_the_remote_extra_says_how_to_get_it(tmp_path: Path) -> None:
    # Hide uvicorn from a fresh interpreter: the message must name the extra.
    (tmp_path / "uvicorn.py").write_text("raise ImportError('hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "acpstack", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 2 and 'pip install ".[remote]"' in done.stderr
    assert 'pip install ".[remote]"' in done.stderr


@pytest.mark.usefixtures("own_user_dirs")
@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_interactive_chat_url_answers_a_permission_prompt_by_key_and_cancels_with_ctrl_c(
    tmp_path: Path, scheme: str
) -> None:
    import pexpect

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    with serve_process("--store", str(tmp_path / "sessions.db")) as served:
        # (pexpect answers no cursor position request: prompt_toolkit is told not to ask)
        env = dict(os.environ, TERM="xterm", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1")
        chat = pexpect.spawn(
            sys.executable,
            ["-m", "acpstack", "chat", "--url", scheme + served.url[4:]],
            cwd=str(workspace),
            env=env,
            encoding="utf-8",
            timeout=20,
            dimensions=(50, 160),
        )
        try:
            chat.expect("connected to acpstack reference agent")
            chat.expect(PROMPT)
            chat.sendline("/edit README.md Readme Hello")
            chat.expect("permission requested: Edit README.md")
            chat.expect("choose 1-4")
            chat.send("1")  # allow once: one key
            chat.expect("Edited")
            chat.sendline("/run sleep 60")
            chat.expect("choose 1-4")
            chat.send("1")
            chat.expect("sleep 60")
            chat.sendintr()  # Ctrl-C: session/cancel over the remote transport
            chat.expect("cancelled")
            chat.expect(PROMPT, timeout=10)  # a fresh input line
            chat.sendeof()
            chat.expect(pexpect.EOF)
        finally:
            chat.close(force=True)
    assert (workspace / "README.md").read_text() == "# Hello\n"


@pytest.mark.parametrize("key", ["", "unstable = false\n", "unstable = true\n"])
async def test_serve_name_relays_unstable_methods_whatever_the_profile_says(
    tmp_path: Path, key: str
) -> None:
    """A profile's `unstable` key is the chat's (its own connection); `serve NAME` relays
    the remote client's messages to the agent unchanged, so unstable methods reach an
    agent that offers them whether the profile has the key or not."""
    from acpstack.client import ClientRuntime, connect_remote

    config = tmp_path / "config" / "acpstack" / "config.toml"
    config.parent.mkdir(parents=True)
    agent = [sys.executable, "-m", "acpstack", "agent", "--unstable"]
    agent += ["--store", str(tmp_path / "sessions.db")]
    config.write_text(f"[agents.mine]\ncommand = {agent!r}\n{key}".replace("'", '"'))
    with serve_process("mine", env={"XDG_CONFIG_HOME": str(tmp_path / "config")}) as served:
        runtime = ClientRuntime()
        async with connect_remote(served.url, runtime, unstable=True):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            assert await runtime.set_title(sid, "named") == "named"
            assert await runtime.fork_session(sid, str(tmp_path)) != sid


@pytest.mark.parametrize("unstable", [True, False])
async def test_serve_unstable_offers_the_reference_agents_unstable_methods(
    tmp_path: Path, unstable: bool
) -> None:
    # The reference agent runs in the server's process: `--unstable` is what lets it offer
    # fork and titles to remote clients (without it they answer -32601).
    from acpstack import CapabilityError
    from acpstack.client import ClientRuntime, connect_remote

    args = ["--store", str(tmp_path / "sessions.db"), *(["--unstable"] if unstable else [])]
    with serve_process(*args) as served:
        runtime = ClientRuntime()
        async with connect_remote(served.url, runtime, unstable=True):
            await runtime.initialize()
            sid = (await runtime.new_session(str(tmp_path))).session_id
            if unstable:
                assert await runtime.set_title(sid, "named") == "named"
                assert await runtime.fork_session(sid, str(tmp_path)) != sid
            else:  # not offered: the client does not even send it
                with pytest.raises(CapabilityError):
                    await runtime.fork_session(sid, str(tmp_path))
