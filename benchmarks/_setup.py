"""The benchmark's own setup: each implementation installed as its users install it, in a
private venv under benchmarks/, made from the interpreter the run is for (by default the
one running the benchmark; `--python` picks another, e.g. pyenv's 3.12):

- acpstack (`pip install <this checkout>[fast,remote]`, a built wheel with its runtime
  dependencies only; the remote ones load only for W8) in benchmarks/.venv-acpstack-3.X,
  reinstalled whenever the sources change (`--build mypyc`: the wheel compiled with mypyc,
  in benchmarks/.venv-acpstack-mypyc-3.X)
- Python SDK (`agent-client-protocol` from PyPI) in benchmarks/.venv-pysdk-3.X
- the floor's orjson in benchmarks/.venv-floor-3.X
- TypeScript SDK (`@agentclientprotocol/sdk` from npm) in benchmarks/.node, only when node is on PATH

The SDKs are pinned to the versions BENCHMARKS.md anchors on, so runs compare like with
like. Installs happen once; later runs reuse them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
PY_SDK = "agent-client-protocol==0.12.1"
TS_SDK = "@agentclientprotocol/sdk@2.4.0"
TS_WS = "ws@8"  # the WebSocket library the TypeScript SDK's remote transports take under Node
NODE_DIR = HERE / ".node"


def python_version(python: str) -> str:
    """ "3.11" for a Python 3.11 interpreter."""
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _venv(
    name: str,
    base: str,
    requirements: list[str],
    stamp_text: str,
    env: dict[str, str] | None = None,
) -> Path:
    """The Python of benchmarks/.venv-NAME-3.X made from `base` with `requirements`
    installed (pip run with `env` added to its environment); rebuilt when `stamp_text`
    (what should be installed) changes."""
    home = HERE / f".venv-{name}-{python_version(base)}"
    python = home / "bin" / "python"
    stamp = home / ".installed"
    if not (stamp.exists() and stamp.read_text() == stamp_text):
        print(f"setup: installing {' '.join(requirements)} into {home}", file=sys.stderr)
        subprocess.run([base, "-m", "venv", "--clear", str(home)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *requirements],
            check=True,
            env={**os.environ, **(env or {})},
        )
        stamp.write_text(stamp_text)
    return python


def _source_digest() -> str:
    return _digest(sorted([PROJECT / "pyproject.toml", *(PROJECT / "src").rglob("*.py")]))


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(PROJECT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def acpstack_python(base: str, build: str = "pure") -> Path:
    """A venv with this checkout installed the way a user installs it: a wheel with
    compiled bytecode and only acpstack's runtime dependencies (msgspec, uvloop). The
    development venv also holds typing_extensions, pydantic and the test tools, which
    msgspec picks up at import and which would make cold start and memory look worse.
    `build` "mypyc": the wheel compiled with mypyc (ACPSTACK_MYPYC=1), in a venv of its own."""
    if build == "mypyc":
        return _venv(
            "acpstack-mypyc",
            base,
            [f"{PROJECT}[fast,remote]"],
            _source_digest() + " mypyc",
            {"ACPSTACK_MYPYC": "1"},
        )
    return _venv(
        "acpstack", base, [f"{PROJECT}[fast,remote,postgres]"], _source_digest() + " postgres"
    )


def acp_layer_python(base: str) -> Path:
    """A venv where `agent-client-protocol` is acpstack's `acp` layer (compat/), installed
    as `./run compat-install` installs it."""
    return _venv(
        "acp-layer",
        base,
        [f"{PROJECT}[fast]", str(PROJECT / "compat")],
        _source_digest() + " layer " + _digest(sorted((PROJECT / "compat").rglob("*.py"))),
    )


def python_sdk(base: str) -> Path:
    """A venv that has the official Python SDK installed."""
    return _venv("pysdk", base, [PY_SDK], PY_SDK)


def floor_python(base: str) -> Path:
    """A venv with orjson, for the floor's two programs."""
    return _venv("floor", base, ["orjson>=3.10"], "orjson>=3.10")


def node_sdk() -> Path | None:
    """The directory holding the TypeScript peers next to their node_modules, or None without node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    stamp = NODE_DIR / ".installed"
    if not (stamp.exists() and stamp.read_text() == f"{TS_SDK} {TS_WS}"):
        print(f"setup: installing {TS_SDK} {TS_WS} into {NODE_DIR}", file=sys.stderr)
        NODE_DIR.mkdir(exist_ok=True)
        (NODE_DIR / "package.json").write_text(
            json.dumps({"name": "acpstack-bench", "private": True, "type": "module"})
        )
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", TS_SDK, TS_WS],
            cwd=NODE_DIR,
            check=True,
        )
        stamp.write_text(f"{TS_SDK} {TS_WS}")
    # ESM resolves packages from the importing file's location: the peers live below node_modules' parent.
    peers = NODE_DIR / "bench"
    peers.mkdir(exist_ok=True)
    for script in (HERE / "peers").glob("*.mjs"):
        shutil.copyfile(script, peers / script.name)
    return peers


# Run in acpstack's venv: which build is installed. A module compiled with mypyc imports from
# an extension module (.so), which Python picks over the .py beside it.
_BUILD_PROBE = """
import importlib, json, pathlib
import acpstack
root = pathlib.Path(acpstack.__file__).parent
compiled = sorted(
    ".".join(("acpstack", *p.relative_to(root).parts[:-1], p.name.split(".")[0]))
    for p in [*root.rglob("*.so"), *root.rglob("*.pyd")]
    if "__mypyc" not in p.name  # mypyc's shared runtime library, not a module
)
try:
    probe = importlib.import_module("acpstack.wire._ndjson").__file__ or ""
except ImportError:
    probe = ""
kind = "mypyc" if probe.endswith((".so", ".pyd")) or compiled else "pure Python"
print(json.dumps({"build": kind, "compiled": compiled}))
"""


def acpstack_build(ours: Path) -> dict[str, object]:
    """{"build": "pure Python" or "mypyc", "compiled": [modules from extension files]}."""
    found = subprocess.run(
        [str(ours), "-c", _BUILD_PROBE], capture_output=True, text=True, check=True
    )
    build: dict[str, object] = json.loads(found.stdout)
    return build


def _installed(python: Path, *packages: str) -> dict[str, str]:
    code = "import sys; from importlib.metadata import version; print(*(version(p) for p in sys.argv[1:]))"
    found = subprocess.run(
        [str(python), "-c", code, *packages], capture_output=True, text=True, check=True
    )
    return dict(zip(packages, found.stdout.split(), strict=True))


def versions(ours: Path, python: Path, node_peers: Path | None) -> dict[str, str]:
    full = subprocess.run(
        [str(ours), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    out = {"python": full, **_installed(ours, "acpstack", "msgspec", "uvloop")}
    out.update(_installed(python, "agent-client-protocol", "pydantic"))
    if node_peers is not None:
        pkg = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
        out["@agentclientprotocol/sdk"] = json.loads(pkg.read_text())["version"]
        out["node"] = subprocess.run(
            ["node", "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return out
