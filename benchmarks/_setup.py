"""The benchmark's own setup: each implementation installed as its users install it, in a
private directory under benchmarks/.

- acpstack (`pip install <this checkout>[fast]`, a built wheel with its runtime dependencies
  only) in benchmarks/.venv-acpstack, reinstalled whenever the sources change
- Python SDK (`agent-client-protocol` from PyPI) in benchmarks/.venv-pysdk
- TypeScript SDK (`@agentclientprotocol/sdk` from npm) in benchmarks/.node, only when node is on PATH

Both are pinned to the versions BENCHMARKS.md anchors on, so runs compare like with like.
Installs happen once; later runs reuse them.
"""

from __future__ import annotations

import hashlib
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


PROJECT = HERE.parent
ACPSTACK_VENV = HERE / ".venv-acpstack"


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([PROJECT / "pyproject.toml", *(PROJECT / "src").rglob("*.py")]):
        digest.update(str(path.relative_to(PROJECT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def acpstack_python() -> Path:
    """The Python of a venv with this checkout installed the way a user installs it: a
    wheel with compiled bytecode and only acpstack's runtime dependencies (msgspec, uvloop).
    The development venv also holds typing_extensions, pydantic and the test tools, which
    msgspec picks up at import and which would make cold start and memory look worse."""
    python = ACPSTACK_VENV / "bin" / "python"
    stamp = ACPSTACK_VENV / ".installed"
    digest = _source_digest()
    if not (stamp.exists() and stamp.read_text() == digest):
        print(f"setup: installing this checkout into {ACPSTACK_VENV}", file=sys.stderr)
        venv.create(ACPSTACK_VENV, with_pip=True, clear=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"{PROJECT}[fast]"], check=True)
        stamp.write_text(digest)
    return python


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


def _installed(python: Path, *packages: str) -> dict[str, str]:
    code = "import sys; from importlib.metadata import version; print(*(version(p) for p in sys.argv[1:]))"
    found = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, check=True)
    return dict(zip(packages, found.stdout.split(), strict=True))


def versions(ours: Path, python: Path, node_peers: Path | None) -> dict[str, str]:
    out = {"python": sys.version.split()[0], **_installed(ours, "acpstack", "msgspec", "uvloop")}
    out.update(_installed(python, "agent-client-protocol", "pydantic"))
    if node_peers is not None:
        pkg = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
        out["@agentclientprotocol/sdk"] = json.loads(pkg.read_text())["version"]
        out["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return out
