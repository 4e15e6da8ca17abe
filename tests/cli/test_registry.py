"""Agents by name: the shipped registry snapshot, `acpstack agents [--update]`, profiles
in config.toml, and the three launch paths (npx, uvx, binary) end to end.

No network: the registry and the binary archives are served by an HTTP server on
127.0.0.1; `npx` and `uvx` are fakes on PATH that record their arguments and then start
peers/chat_agent.py (a real agent the chat talks to)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from acpstack.cli._registry import RegistryError, load_snapshot, parse_registry, platform_key
from acpstack.cli._registry._binary import unpack

PEERS = Path(__file__).parent / "peers"
ACPSTACK = [sys.executable, "-m", "acpstack"]
AGENT = f"{sys.executable} {PEERS / 'chat_agent.py'}"


class Files:
    """An HTTP server on 127.0.0.1 serving `files` (path -> bytes) and counting requests."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        files, requests = self.files, self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                requests.append(self.path)
                body = files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> Files:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def files() -> Iterator[Files]:
    with Files() as served:
        yield served


def entry(agent_id: str, distribution: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": agent_id,
        "name": agent_id.title(),
        "version": "1.0.0",
        "description": f"test agent {agent_id}",
        "distribution": distribution,
    }


def registry(*entries: dict[str, Any]) -> bytes:
    return json.dumps({"version": "1.0.0", "agents": list(entries)}).encode()


def acpstack(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACPSTACK, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def update_from(files: Files, data: bytes) -> subprocess.CompletedProcess[str]:
    files.files["/registry.json"] = data
    env = dict(os.environ, ACPSTACK_REGISTRY_URL=files.url("/registry.json"))
    return acpstack("agents", "--update", env=env)


# -- the registry's data ---------------------------------------------------------------------


def test_the_shipped_snapshot_parses_whole() -> None:
    loaded = load_snapshot()
    agents = loaded.registry.agents
    assert loaded.problems == [] and len(agents) == 39
    kinds = [kind for agent in agents for kind in agent.distribution.kinds()]
    assert (kinds.count("npx"), kinds.count("binary"), kinds.count("uvx")) == (22, 17, 2)
    targets = [t for a in agents for t in (a.distribution.binary or {}).values()]
    assert len(targets) == 90 and sum(t.sha256 is not None for t in targets) == 48
    assert loaded.registry.get("claude-acp") is not None


def test_bad_entries_are_left_out_and_said() -> None:
    good = entry("good", {"npx": {"package": "good@1.0.0"}})
    data = registry(
        good,
        entry("Bad_Id", {"npx": {"package": "x"}}),
        entry("no-dist", {}),
        entry(
            "odd-platform", {"binary": {"amiga-m68k": {"archive": "https://x/a.zip", "cmd": "a"}}}
        ),
        entry(
            "bad-sha",
            {"binary": {"linux-x86_64": {"archive": "https://x", "cmd": "a", "sha256": "zz"}}},
        ),
        good,
    )
    parsed, problems = parse_registry(data)
    assert [a.id for a in parsed.agents] == ["good"]
    assert len(problems) == 5 and "listed twice" in problems[-1]
    for bad in (b"{not json", b'{"agents": 3}', b'{"version": "2.0.0", "agents": []}'):
        with pytest.raises(RegistryError):
            parse_registry(bad)


def test_the_current_format_has_extensions_and_the_old_one_is_read_too() -> None:
    ext = entry("an-extension", {"npx": {"package": "ext@1.0.0"}})
    bad_ext = entry("Bad_Ext", {"npx": {"package": "x"}})
    agent = entry("an-agent", {"uvx": {"package": "agent==1.0.0"}})
    current = json.dumps({"version": "1.0.0", "agents": [agent], "extensions": [ext, bad_ext]})
    parsed, problems = parse_registry(current.encode())
    assert [a.id for a in parsed.agents] == ["an-agent"]
    assert [e.id for e in parsed.extensions] == ["an-extension"]
    assert len(problems) == 1 and problems[0].startswith("extension Bad_Ext:")
    old, problems = parse_registry(registry(agent))  # no `extensions` key
    assert old.extensions == [] and problems == []
    assert load_snapshot().registry.extensions == []  # the shipped snapshot predates the key
    with pytest.raises(RegistryError, match="`extensions` is not a list"):
        parse_registry(b'{"version": "1.0.0", "agents": [], "extensions": {}}')


def test_agents_search_finds_by_id_name_description_or_package() -> None:
    found = acpstack("agents", "search", "GEMINI")
    assert found.returncode == 0, found.stderr
    assert [line.split()[0] for line in found.stdout.splitlines()] == ["gemini"]
    by_package = acpstack("agents", "search", "fast-agent-acp", "--format", "json")
    assert [a["id"] for a in json.loads(by_package.stdout)["agents"]] == ["fast-agent"]
    nothing = acpstack("agents", "search", "no-such-word-anywhere")
    assert nothing.returncode == 1 and nothing.stdout == ""
    assert "no agent mentions 'no-such-word-anywhere'" in nothing.stderr
    no_word = acpstack("agents", "search")
    assert no_word.returncode == 2 and "give the word" in no_word.stderr


def test_agents_lists_the_snapshot_and_shows_one() -> None:
    listed = acpstack("agents")
    assert listed.returncode == 0, listed.stderr
    assert "claude-acp" in listed.stdout and "gemini" in listed.stdout
    assert "39 registry agents (the registry snapshot shipped with acpstack)" in listed.stderr
    shown = acpstack("agents", "fast-agent", "--format", "json")
    assert (
        json.loads(shown.stdout)["entry"]["distribution"]["uvx"]["package"]
        == "fast-agent-acp==0.10.1"
    )
    unknown = acpstack("chat", "claude-acx", "-p", "hi")
    assert unknown.returncode == 2 and "did you mean claude-acp" in unknown.stderr


def test_update_fetches_and_offline_keeps_what_we_have(files: Files) -> None:
    done = update_from(files, registry(entry("fresh-agent", {"npx": {"package": "fresh@1.0.0"}})))
    assert done.returncode == 0, done.stderr
    assert "updated: 1 agents" in done.stderr
    listed = acpstack("agents")
    assert "fresh-agent" in listed.stdout and "claude-acp" not in listed.stdout
    broken = update_from(files, b"<html>not a registry</html>")
    assert broken.returncode == 1 and "did not send a usable registry" in broken.stderr
    assert "fresh-agent" in broken.stdout  # the copy we had stays
    offline = dict(os.environ, ACPSTACK_REGISTRY_URL="http://127.0.0.1:9/registry.json")
    done = acpstack("agents", "--update", env=offline)
    assert done.returncode == 1 and "could not update the registry: cannot reach" in done.stderr
    assert "fresh-agent" in done.stdout and "Traceback" not in done.stderr
    # Offline, it says what it needed and how to do without.
    assert "--update needs a GET of http://127.0.0.1:9/registry.json" in done.stderr
    assert "ACPSTACK_REGISTRY_URL" in done.stderr and "file:///" in done.stderr


def test_update_from_a_downloaded_copy(tmp_path: Path) -> None:
    copy = tmp_path / "registry.json"
    copy.write_bytes(registry(entry("copied-agent", {"npx": {"package": "copied@1.0.0"}})))
    env = dict(os.environ, ACPSTACK_REGISTRY_URL=copy.as_uri())
    done = acpstack("agents", "--update", env=env)
    assert done.returncode == 0, done.stderr
    assert "copied-agent" in done.stdout


# -- launching by name ---------------------------------------------------------------------------


def fake_tool(folder: Path, name: str) -> Path:
    """A fake `npx`/`uvx` on PATH: records its arguments and one env variable, then runs
    the test agent."""
    folder.mkdir(exist_ok=True)
    record = folder / f"{name}.args"
    script = folder / name
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {record}\n'
        f'echo "FROM_REGISTRY=$FROM_REGISTRY" >> {record}\n'
        f"exec {AGENT}\n"
    )
    script.chmod(0o755)
    return record


@pytest.mark.parametrize("tool", ["npx", "uvx"])
def test_npx_and_uvx_agents_run_through_their_tool(files: Files, tmp_path: Path, tool: str) -> None:
    package = {"package": "@test/agent@1.0.0", "args": ["--acp"], "env": {"FROM_REGISTRY": "yes"}}
    assert update_from(files, registry(entry("test-agent", {tool: package}))).returncode == 0
    bin_dir = tmp_path / "bin"
    record = fake_tool(bin_dir, tool)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    done = acpstack("chat", "test-agent", "-p", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "echo: hello" in done.stdout
    expected = ["-y"] if tool == "npx" else []
    assert record.read_text().splitlines() == [
        *expected,
        "@test/agent@1.0.0",
        "--acp",
        "FROM_REGISTRY=yes",
    ]


def agent_archive(kind: str) -> bytes:
    """An archive holding `bin/run-agent`, a script that starts the test agent."""
    script = f'#!/bin/sh\nexec {AGENT} "$@"\n'.encode()
    out = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(out, "w") as zf:
            info = zipfile.ZipInfo("pkg/bin/run-agent")
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            zf.writestr(info, script)
    else:
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            info = tarfile.TarInfo("pkg/bin/run-agent")
            info.size, info.mode = len(script), 0o755
            tar.addfile(info, io.BytesIO(script))
    return out.getvalue()


def binary_entry(files: Files, archive: bytes, name: str, sha256: str | None) -> dict[str, Any]:
    files.files[f"/{name}"] = archive
    target: dict[str, Any] = {"archive": files.url(f"/{name}"), "cmd": "./pkg/bin/run-agent"}
    if sha256 is not None:
        target["sha256"] = sha256
    key = platform_key()
    assert key is not None
    return entry("bin-agent", {"binary": {key: target}})


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_a_binary_agent_is_downloaded_once_checked_and_run(
    files: Files, tmp_path: Path, kind: str
) -> None:
    archive = agent_archive(kind)
    name = f"agent.{kind}"
    assert (
        update_from(
            files, registry(binary_entry(files, archive, name, hashlib.sha256(archive).hexdigest()))
        ).returncode
        == 0
    )
    for _ in range(2):
        done = acpstack("chat", "bin-agent", "-p", "hello", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "echo: hello" in done.stdout
    assert files.requests.count(f"/{name}") == 1  # the second run used the unpacked copy


def test_a_binary_with_a_wrong_sha256_is_refused(files: Files, tmp_path: Path) -> None:
    archive = agent_archive("tar.gz")
    assert (
        update_from(
            files, registry(binary_entry(files, archive, "agent.tar.gz", "0" * 64))
        ).returncode
        == 0
    )
    done = acpstack("chat", "bin-agent", "-p", "hello", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1
    assert "sha256 mismatch" in done.stderr and "nothing was installed" in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["exitCode"] == 1
    installed = Path(os.environ["XDG_CACHE_HOME"]) / "acpstack" / "agents"
    assert not list(installed.rglob("run-agent"))  # not unpacked, not kept


def tar_with(member: tarfile.TarInfo, data: bytes = b"x") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        member.size = len(data) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return out.getvalue()


def symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


@pytest.mark.parametrize(
    "archive",
    [
        tar_with(tarfile.TarInfo("../escaped")),
        tar_with(tarfile.TarInfo("/tmp/absolute")),
        tar_with(symlink("pkg/link", "/etc/passwd")),
        tar_with(symlink("pkg/link", "../../outside")),
    ],
    ids=["dotdot", "absolute", "symlink-absolute", "symlink-out"],
)
def test_unsafe_tar_archives_are_refused(tmp_path: Path, archive: bytes) -> None:
    path, dest = tmp_path / "a.tar.gz", tmp_path / "dest"
    path.write_bytes(archive)
    dest.mkdir()
    with pytest.raises(RegistryError):
        unpack(path, "a.tar.gz", dest, "cmd")
    assert list(dest.iterdir()) == [] and not (tmp_path / "escaped").exists()


def test_unsafe_zip_archives_are_refused(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("../escaped", b"x")
    path, dest = tmp_path / "a.zip", tmp_path / "dest"
    path.write_bytes(out.getvalue())
    dest.mkdir()
    with pytest.raises(RegistryError, match="unsafe path"):
        unpack(path, "a.zip", dest, "cmd")
    assert not (tmp_path / "escaped").exists()


def test_a_raw_binary_is_the_command(tmp_path: Path) -> None:
    path, dest = tmp_path / "download", tmp_path / "dest"
    path.write_bytes(b"#!/bin/sh\n")
    dest.mkdir()
    unpack(path, "tool-linux-amd64", dest, "./tool")
    assert (dest / "tool").read_bytes() == b"#!/bin/sh\n"


# -- profiles ----------------------------------------------------------------------------------


def test_profiles_run_and_override_registry_entries(files: Files, tmp_path: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "acpstack" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'default_agent = "mine"\n[agents.mine]\ncommand = "{AGENT}"\nmode = "code"\n'
        '[agents.test-agent]\nenv = { FROM_REGISTRY = "from the profile" }\n'
    )
    log = tmp_path / "peer.jsonl"
    env = dict(os.environ, PEER_LOG=str(log))
    done = acpstack("chat", "-p", "hello", env=env, cwd=tmp_path)  # the default agent: mine
    assert done.returncode == 0, done.stderr
    assert "echo: hello" in done.stdout and '"mode": "code"' in log.read_text()
    package = {"package": "@test/agent@1.0.0", "env": {"FROM_REGISTRY": "yes"}}
    assert update_from(files, registry(entry("test-agent", {"npx": package}))).returncode == 0
    bin_dir = tmp_path / "bin"
    record = fake_tool(bin_dir, "npx")
    env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
    done = acpstack("chat", "test-agent", "-p", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert record.read_text().splitlines()[-1] == "FROM_REGISTRY=from the profile"
    listed = acpstack("agents", env=env)
    assert listed.stdout.splitlines()[0].startswith("mine") and "profile" in listed.stdout
    config.write_text("[agents.mine]\ncommand = 3\n")
    bad = acpstack("chat", "mine", "-p", "hi", env=env, cwd=tmp_path)
    assert (
        bad.returncode == 2
        and "agents.mine.command" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_serve_starts_an_agent_by_name(files: Files, tmp_path: Path) -> None:
    package = {"package": "@test/agent@1.0.0"}
    assert update_from(files, registry(entry("test-agent", {"npx": package}))).returncode == 0
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "npx")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    serve = subprocess.Popen(
        [*ACPSTACK, "serve", "test-agent", "--port", "0", "--no-token"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stderr is not None
        ready = serve.stderr.readline()
        url = ready.split(" on ")[1].split(" and ")[0]
        assert "npx -y @test/agent@1.0.0" in ready
        done = acpstack("chat", "--url", url, "-p", "hello", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "echo: hello" in done.stdout
    finally:
        serve.terminate()
        serve.communicate(timeout=20)


def test_archives_come_only_over_https_or_from_this_machine() -> None:
    from acpstack.cli._registry._binary import check_url

    for allowed in (
        "https://example.com/a.tar.gz",
        "http://127.0.0.1:8000/a.zip",
        "http://[::1]/a",
    ):
        check_url(allowed)
    for refused in ("http://example.com/a.tar.gz", "file:///etc/passwd", "ftp://x/a.zip"):
        with pytest.raises(RegistryError, match="only https://"):
            check_url(refused)
