"""Install and launch the *foreign* ACP peers used by the interop tests.

The peers are small programs built on the official SDKs (nobody here wrote the
SDKs, so they are an independent check of our wire behaviour):

* the official Python SDK (PyPI ``agent-client-protocol``), installed into a
  separate virtualenv so that it never mixes with the project's own venv;
* the official TypeScript SDK (npm ``@agentclientprotocol/sdk``), installed
  into a private ``node_modules``.

Everything goes under ``<repo>/.cache/interop/`` (git-ignored).  Each install
runs once; a ``fcntl.flock`` on a lock file makes concurrent callers (several
pytest processes, xdist workers) wait for each other instead of racing, and a
stamp file records a finished install so an interrupted one is redone.

Run ``python tests/interop/_foreign.py`` to prepare everything up front; it
prints the argv of every peer. The remote peers (``tests/remote/peers/``: servers
and clients over streamable HTTP and WebSocket) use the same installs, which
therefore include npm ``ws`` and the Python SDK's ``http`` extra with uvicorn;
``ts_remote_cmd`` / ``py_sdk_remote_cmd`` give their argv.

Peers (``tests/interop/peers/``; see each file's header for details):

* agents ``py_sdk_agent_cmd()`` / ``ts_agent_cmd()``: stdio ACP agents with
  the same scripted behaviour, chosen by the first text block of a prompt:
  ``stream N``, ``permission``, ``read PATH [line=N] [limit=M]``,
  ``write PATH TEXT``, ``wait`` (until ``session/cancel``), anything else is
  echoed as ``echo: <text>``.  Client errors come back as a chunk
  ``error: <code> <message>``.
* clients ``py_sdk_client_cmd(agent_argv, *options)`` /
  ``ts_client_cmd(agent_argv, *options)``: spawn ``agent_argv``, run a scenario
  and print one JSON report on stdout.  Options: ``--scenario prompts|cancel``,
  ``--cwd DIR``, ``--permission allow|reject|cancel|hold``, ``--prompt TEXT``
  (repeatable), ``--timeout SECONDS`` (default 60), ``--caps all|fs|none`` (what the
  client advertises: fs and terminals, fs only (the default), nothing; terminals are
  real processes).  Report::

      {"initialize": {...raw result...}, "sessionId": "...",
       "turns": [{"prompt", "stopReason", "updates": [raw update objects in wire order],
                  "sdkUpdates": [the updates the SDK accepted, as it parsed them],
                  "error": null | {"code", "message"[, "data"]}}],
       "permissionRequests": [raw params], "fsReads": [{"path", "line", "limit"}],
       "fsWrites": [{"path", "content"}],
       "lateUpdates": [raw updates received while no prompt was outstanding],
       "terminals": [{"command", "args", "cwd"}], "agentExitCode": int | null}

* ``ts_unstable_agent_cmd()`` / ``ts_unstable_client_cmd(agent_argv, *options)``: the same
  SDK's unstable entry point (``@agentclientprotocol/sdk/unstable``), for the newer methods
  (session management, auth status, elicitation, providers, MCP over ACP, ...); see the
  headers of ``peers/ts_unstable_agent.mjs`` and ``peers/ts_unstable_client.mjs``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

PY_SDK_REQUIREMENT = "agent-client-protocol==0.12.1"
# The remote peers (tests/remote) need the SDK's `http` extra and an ASGI server.
PY_SDK_EXTRAS = ["agent-client-protocol[http]==0.12.1", "uvicorn>=0.30"]
TS_SDK_PACKAGE = "@agentclientprotocol/sdk"
TS_SDK_VERSION = "2.4.0"
# The TypeScript SDK's WebSocket server and client take the `ws` package under Node; the
# proxy-chain interop tests run the third-party conductor `@thinkwell/conductor`.
TS_EXTRA_PACKAGES = {"ws": "8", "@thinkwell/conductor": "0.5.7"}

HERE = Path(__file__).resolve().parent
PEERS_DIR = HERE / "peers"
REPO_ROOT = HERE.parent.parent
CACHE_DIR = REPO_ROOT / ".cache" / "interop"
PY_VENV_DIR = CACHE_DIR / "pysdk-venv"
NODE_DIR = CACHE_DIR / "node"

PY_AGENT_SCRIPT = PEERS_DIR / "py_sdk_agent.py"
PY_CLIENT_SCRIPT = PEERS_DIR / "py_sdk_client.py"
TS_AGENT_SCRIPT = PEERS_DIR / "ts_agent.mjs"
TS_CLIENT_SCRIPT = PEERS_DIR / "ts_client.mjs"
# On the SDK's unstable entry point, for the newer methods (see each file's header).
TS_UNSTABLE_AGENT_SCRIPT = PEERS_DIR / "ts_unstable_agent.mjs"
TS_UNSTABLE_CLIENT_SCRIPT = PEERS_DIR / "ts_unstable_client.mjs"
REMOTE_PEERS_DIR = REPO_ROOT / "tests" / "remote" / "peers"

# Where the .mjs peers are placed inside NODE_DIR: ESM ignores NODE_PATH, so a
# bare ``import "@agentclientprotocol/sdk"`` only resolves from a file that
# lives below the directory holding node_modules.
_NODE_PEERS_SUBDIR = "peers"

_INSTALL_TIMEOUT = 900  # seconds, per install command


class ForeignInstallError(RuntimeError):
    """An SDK could not be installed (no network, registry error, ...)."""


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / f"{name}.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _run(argv: Sequence[str], *, cwd: Path | None = None) -> None:
    env = dict(os.environ)
    # Keep the install independent of whatever venv launched us.
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    env.setdefault("npm_config_update_notifier", "false")
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_INSTALL_TIMEOUT,
    )
    if proc.returncode != 0:
        raise ForeignInstallError(
            f"command failed ({proc.returncode}): {' '.join(argv)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )


def _stamp_ok(stamp: Path, expected: str) -> bool:
    try:
        return stamp.read_text(encoding="utf-8") == expected
    except OSError:
        return False


# --------------------------------------------------------------------------- python


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def python_sdk_python() -> Path:
    """Return the python of a private venv with the official Python SDK installed."""
    py = _venv_python(PY_VENV_DIR)
    stamp = PY_VENV_DIR / ".acpstack-installed"
    wanted = " ".join([PY_SDK_REQUIREMENT, *PY_SDK_EXTRAS])
    if _stamp_ok(stamp, wanted) and py.exists():
        return py
    with _locked("pysdk"):
        if _stamp_ok(stamp, wanted) and py.exists():
            return py
        if PY_VENV_DIR.exists():
            shutil.rmtree(PY_VENV_DIR)
        _run([sys.executable, "-m", "venv", str(PY_VENV_DIR)])
        _run(
            [
                str(py),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                PY_SDK_REQUIREMENT,
                *PY_SDK_EXTRAS,
            ]
        )
        _run([str(py), "-c", "import acp, acp.http.client, acp.ws.client, uvicorn"])
        stamp.write_text(wanted, encoding="utf-8")
    return py


# --------------------------------------------------------------------------- node


def node_available() -> bool:
    return shutil.which("node") is not None and shutil.which("npm") is not None


def node_sdk_dir() -> Path | None:
    """Install the TypeScript SDK into a private dir; None when node/npm are missing."""
    if not node_available():
        return None
    spec = " ".join(
        [f"{TS_SDK_PACKAGE}@{TS_SDK_VERSION}", *(f"{n}@{v}" for n, v in TS_EXTRA_PACKAGES.items())]
    )
    stamp = NODE_DIR / ".acpstack-installed"
    pkg_json = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not (_stamp_ok(stamp, spec) and pkg_json.exists()):
        with _locked("node"):
            if not (_stamp_ok(stamp, spec) and pkg_json.exists()):
                _install_node_sdk(spec, stamp, pkg_json)
    _place_node_peers()
    return NODE_DIR


def _install_node_sdk(spec: str, stamp: Path, pkg_json: Path) -> None:
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        stamp.unlink()
    manifest = {
        "name": "acpstack-interop-peers",
        "version": "0.0.0",
        "private": True,
        "type": "module",
        "dependencies": {TS_SDK_PACKAGE: TS_SDK_VERSION, **TS_EXTRA_PACKAGES},
    }
    (NODE_DIR / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    npm = shutil.which("npm")
    assert npm is not None
    _run(
        [npm, "install", "--no-audit", "--no-fund", "--save-exact", *spec.split()],
        cwd=NODE_DIR,
    )
    installed = json.loads(pkg_json.read_text(encoding="utf-8"))["version"]
    if installed != TS_SDK_VERSION:
        raise ForeignInstallError(
            f"npm installed {TS_SDK_PACKAGE} {installed}, wanted {TS_SDK_VERSION}"
        )
    stamp.write_text(spec, encoding="utf-8")


def _place_node_peers() -> None:
    """Copy the .mjs peers into NODE_DIR/peers so the bare SDK import resolves.

    A symlink is not enough: node resolves the main module to its real path
    before resolving its imports (unless --preserve-symlinks-main is given).
    The copy is refreshed whenever the source changes and replaced atomically,
    so a concurrent caller never sees a missing or half-written file.
    """
    target_dir = NODE_DIR / _NODE_PEERS_SUBDIR
    target_dir.mkdir(parents=True, exist_ok=True)
    for src in (*sorted(PEERS_DIR.glob("*.mjs")), *sorted(REMOTE_PEERS_DIR.glob("*.mjs"))):
        data = src.read_bytes()
        dst = target_dir / src.name
        try:
            if not dst.is_symlink() and dst.read_bytes() == data:
                continue
        except OSError:
            pass
        tmp = target_dir / f".{src.name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, dst)


def _node_script(script: Path) -> Path:
    d = node_sdk_dir()
    if d is None:
        raise ForeignInstallError("node/npm not found on PATH")
    return d / _NODE_PEERS_SUBDIR / script.name


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise ForeignInstallError("node not found on PATH")
    return node


# --------------------------------------------------------------------------- argv


def py_sdk_agent_cmd() -> list[str]:
    """argv of the agent built on the official Python SDK."""
    return [str(python_sdk_python()), str(PY_AGENT_SCRIPT)]


def py_sdk_client_cmd(agent_argv: Sequence[str], *options: str) -> list[str]:
    """argv of the Python-SDK client; ``options`` go before ``--`` (e.g. --scenario cancel)."""
    return [str(python_sdk_python()), str(PY_CLIENT_SCRIPT), *options, "--", *agent_argv]


def ts_agent_cmd() -> list[str]:
    """argv of the agent built on the official TypeScript SDK."""
    return [_node(), str(_node_script(TS_AGENT_SCRIPT))]


def ts_client_cmd(agent_argv: Sequence[str], *options: str) -> list[str]:
    """argv of the TypeScript-SDK client; ``options`` go before ``--``."""
    return [_node(), str(_node_script(TS_CLIENT_SCRIPT)), *options, "--", *agent_argv]


def ts_unstable_agent_cmd() -> list[str]:
    """argv of the agent on the TypeScript SDK's unstable entry point."""
    return [_node(), str(_node_script(TS_UNSTABLE_AGENT_SCRIPT))]


def ts_proxy_cmd() -> list[str]:
    """argv of the proxy-chain component on the TypeScript SDK (peers/ts_proxy.mjs)."""
    return [_node(), str(_node_script(PEERS_DIR / "ts_proxy.mjs"))]


def thinkwell_conductor_cmd(*components: str) -> list[str]:
    """argv of @thinkwell/conductor on stdio running `components` (command lines, the
    last one the agent; peers/tw_conduct.mjs)."""
    return [_node(), str(_node_script(PEERS_DIR / "tw_conduct.mjs")), *components]


def ts_unstable_client_cmd(agent_argv: Sequence[str], *options: str) -> list[str]:
    """argv of the client on the TypeScript SDK's unstable entry point."""
    return [_node(), str(_node_script(TS_UNSTABLE_CLIENT_SCRIPT)), *options, "--", *agent_argv]


def py_sdk_remote_cmd(script: str, *args: str) -> list[str]:
    """argv of a remote peer (tests/remote/peers/SCRIPT) on the official Python SDK."""
    return [str(python_sdk_python()), str(REMOTE_PEERS_DIR / script), *args]


def ts_remote_cmd(script: str, *args: str) -> list[str]:
    """argv of a remote peer (tests/remote/peers/SCRIPT.mjs) on the official TypeScript SDK."""
    return [_node(), str(_node_script(REMOTE_PEERS_DIR / script)), *args]


def prepare_all() -> dict[str, list[str] | None]:
    python_sdk_python()
    out: dict[str, list[str] | None] = {
        "py_sdk_agent": py_sdk_agent_cmd(),
        "py_sdk_client": py_sdk_client_cmd(["<agent argv>"]),
        "ts_agent": None,
        "ts_client": None,
    }
    if node_sdk_dir() is not None:
        out["ts_agent"] = ts_agent_cmd()
        out["ts_client"] = ts_client_cmd(["<agent argv>"])
    return out


if __name__ == "__main__":
    for name, argv in prepare_all().items():
        print(f"{name}: {argv if argv is not None else 'unavailable (node/npm missing)'}")


# --------------------------------------------------------------------------- fast-agent, acpx

FAST_AGENT_REQUIREMENT = "fast-agent-mcp==0.10.48"  # its ACP server, on the official SDK
FAST_AGENT_DIR = CACHE_DIR / "fast-agent-venv"
ACPX_SPEC = "acpx@0.19.1"
ACPX_DIR = CACHE_DIR / "acpx"


def _python_312() -> str | None:
    """A CPython 3.12 or newer (fast-agent needs it): pyenv's, or on PATH."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(str(p) for p in Path(root).glob("versions/3.1[2-9]*/bin/python3"))
    candidates += [p for p in (shutil.which(f"python3.{n}") for n in (12, 13, 14)) if p]
    for python in candidates:
        probe = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return python
    return None


def fast_agent_script() -> Path:
    """fast-agent in a private venv (Python 3.12+) whose official SDK was replaced by
    acpstack's `acp` layer (`./run compat-install`); installed on first use."""
    script = FAST_AGENT_DIR / "bin" / "fast-agent"
    stamp = FAST_AGENT_DIR / ".acpstack-installed"
    if _stamp_ok(stamp, FAST_AGENT_REQUIREMENT) and script.exists():
        return script
    with _locked("fast-agent"):
        if _stamp_ok(stamp, FAST_AGENT_REQUIREMENT) and script.exists():
            return script
        python = _python_312()
        if python is None:
            raise ForeignInstallError("fast-agent needs a CPython 3.12 or newer; none found")
        if FAST_AGENT_DIR.exists():
            shutil.rmtree(FAST_AGENT_DIR)
        _run([python, "-m", "venv", str(FAST_AGENT_DIR)])
        pip = [str(_venv_python(FAST_AGENT_DIR)), "-m", "pip", "install", "--quiet"]
        _run([*pip, "--disable-pip-version-check", FAST_AGENT_REQUIREMENT])
        _run([sys.executable, "tools/compat_install.py", str(FAST_AGENT_DIR)], cwd=REPO_ROOT)
        stamp.write_text(FAST_AGENT_REQUIREMENT, encoding="utf-8")
    return script


def acpx_script() -> Path | None:
    """acpx (npm) in a private dir, installed on first use; None without node/npm."""
    if not node_available():
        return None
    script = ACPX_DIR / "node_modules" / ".bin" / "acpx"
    stamp = ACPX_DIR / ".acpstack-installed"
    if _stamp_ok(stamp, ACPX_SPEC) and script.exists():
        return script
    with _locked("acpx"):
        if not (_stamp_ok(stamp, ACPX_SPEC) and script.exists()):
            ACPX_DIR.mkdir(parents=True, exist_ok=True)
            (ACPX_DIR / "package.json").write_text('{"private": true}\n', "utf-8")
            npm = shutil.which("npm")
            assert npm is not None
            _run(
                [npm, "install", "--no-audit", "--no-fund", "--save-exact", ACPX_SPEC], cwd=ACPX_DIR
            )
            stamp.write_text(ACPX_SPEC, encoding="utf-8")
    return script


# --------------------------------------------------------------------------- hosted-model agents

# The two agents that answer only with their vendors' hosted models; the tests point them at
# the scripted model server of fake_models.py instead (versions from the registry snapshot).
CLAUDE_AGENT_SPEC = "@agentclientprotocol/claude-agent-acp@0.69.0"
GEMINI_CLI_SPEC = "@google/gemini-cli@0.55.1"
HOSTED_DIR = CACHE_DIR / "hosted"


def _npm_bin(name: str, spec: str, binary: str) -> Path | None:
    """Install the npm package `spec` into HOSTED_DIR/name on first use and return its
    executable `binary`; None without node/npm."""
    if not node_available():
        return None
    where = HOSTED_DIR / name
    script = where / "node_modules" / ".bin" / binary
    stamp = where / ".acpstack-installed"
    if _stamp_ok(stamp, spec) and script.exists():
        return script
    with _locked(f"hosted-{name}"):
        if not (_stamp_ok(stamp, spec) and script.exists()):
            if where.exists():
                shutil.rmtree(where)
            where.mkdir(parents=True)
            (where / "package.json").write_text('{"private": true}\n', "utf-8")
            npm = shutil.which("npm")
            assert npm is not None
            _run([npm, "install", "--no-audit", "--no-fund", "--save-exact", spec], cwd=where)
            stamp.write_text(spec, encoding="utf-8")
    return script


def claude_agent_script() -> Path | None:
    """claude-agent-acp (npm), installed on first use; None without node/npm."""
    return _npm_bin("claude-agent-acp", CLAUDE_AGENT_SPEC, "claude-agent-acp")


def gemini_cli_script() -> Path | None:
    """gemini-cli (npm), installed on first use; None without node/npm."""
    return _npm_bin("gemini-cli", GEMINI_CLI_SPEC, "gemini")
