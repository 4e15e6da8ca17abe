"""The benchmark's own setup: the official SDKs in private directories under benchmarks/.

- Python SDK (`agent-client-protocol` from PyPI) in benchmarks/.venv-pysdk
- TypeScript SDK (`@agentclientprotocol/sdk` from npm) in benchmarks/.node, only when node is on PATH

Both are pinned to the versions BENCHMARKS.md anchors on, so runs compare like with like.
Installs happen once; later runs reuse them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY_SDK = "agent-client-protocol==0.12.1"
TS_SDK = "@agentclientprotocol/sdk@2.4.0"
PY_VENV = HERE / ".venv-pysdk"
NODE_DIR = HERE / ".node"


def compile_acpstack() -> None:
    """Write bytecode for acpstack's sources, as installing a wheel does (pip compiles the
    SDK's files in its venv). Without it, a development checkout run with
    PYTHONDONTWRITEBYTECODE=1 recompiles every module on each start and W5 measures that."""
    import acpstack

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(acpstack.__file__).parent)], check=True)


def python_sdk() -> Path:
    """The Python of a venv that has the official SDK installed."""
    python = PY_VENV / "bin" / "python"
    stamp = PY_VENV / ".installed"
    if not (stamp.exists() and stamp.read_text() == PY_SDK):
        print(f"setup: installing {PY_SDK} into {PY_VENV}", file=sys.stderr)
        venv.create(PY_VENV, with_pip=True, clear=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PY_SDK], check=True)
        stamp.write_text(PY_SDK)
    return python


def node_sdk() -> Path | None:
    """The directory holding the TypeScript peers next to their node_modules, or None without node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    stamp = NODE_DIR / ".installed"
    if not (stamp.exists() and stamp.read_text() == TS_SDK):
        print(f"setup: installing {TS_SDK} into {NODE_DIR}", file=sys.stderr)
        NODE_DIR.mkdir(exist_ok=True)
        (NODE_DIR / "package.json").write_text(json.dumps({"name": "acpstack-bench", "private": True, "type": "module"}))
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", TS_SDK], cwd=NODE_DIR, check=True)
        stamp.write_text(TS_SDK)
    # ESM resolves packages from the importing file's location: the peers live below node_modules' parent.
    peers = NODE_DIR / "bench"
    peers.mkdir(exist_ok=True)
    for script in (HERE / "peers").glob("*.mjs"):
        shutil.copyfile(script, peers / script.name)
    return peers


def versions(python: Path, node_peers: Path | None) -> dict[str, str]:
    import acpstack

    out = {"acpstack": acpstack.__version__, "python": sys.version.split()[0]}
    out["agent-client-protocol"] = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('agent-client-protocol'))"],
        capture_output=True, text=True, check=True).stdout.strip()
    if node_peers is not None:
        pkg = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
        out["@agentclientprotocol/sdk"] = json.loads(pkg.read_text())["version"]
        out["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return out
