"""The layer picture of DESIGN.md, checked on the source: each layer imports only the ones above."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import acpstack

PACKAGE = Path(acpstack.__file__).resolve().parent
ORDER = [
    "schema",
    "events",
    "wire",
    "transports",
    "local",
    "rpc",
    "agent",
    "client",
    "proxy",
    "server",
    "testing",
    "conformance",
    "traffic",
    "cli",
]
RANK = {
    "schema": 0,
    "events": 1,  # the session event model: schema only; agent, client and cli use it
    "wire": 1,
    "transports": 2,
    "local": 2,
    "rpc": 3,
    "agent": 4,
    "client": 4,
    "proxy": 4,
    "server": 5,
    "testing": 6,
    "conformance": 7,
    "traffic": 8,
    "cli": 9,
}


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def layer_modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def test_every_layer_exists() -> None:
    assert all((PACKAGE / layer).is_dir() for layer in ORDER)


def test_layers_import_only_layers_above_them() -> None:
    problems = []
    for layer in ORDER:
        for path in layer_modules(layer):
            for name in imports_of(path):
                parts = name.split(".")
                if parts[0] != "acpstack" or len(parts) < 2 or parts[1] not in RANK:
                    continue
                other = parts[1]
                if other == layer:
                    continue
                if RANK[other] >= RANK[layer]:
                    problems.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert problems == []


def test_agent_and_client_never_import_each_other() -> None:
    for layer, other in (("agent", "client"), ("client", "agent")):
        for path in layer_modules(layer):
            assert not [n for n in imports_of(path) if n.startswith(f"acpstack.{other}")], path


def test_wire_and_schema_never_import_asyncio() -> None:
    for layer in ("schema", "wire"):
        for path in layer_modules(layer):
            assert not [n for n in imports_of(path) if n.split(".")[0] == "asyncio"], path


def test_import_acpstack_stays_small() -> None:
    code = "import sys, acpstack; print(sorted(m for m in ('asyncio', 'rich', 'mcp', 'httpx', 'msgspec') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    # The optional extras stay out of the core runtime too.
    code = "import sys, acpstack.agent, acpstack.client; print(sorted(m for m in ('rich', 'mcp', 'httpx') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_plain_agent_does_not_load_what_it_does_not_use() -> None:
    # Cold start: serving a stable-protocol Agent needs neither the unstable schema nor the
    # SessionAgent runtime (SQLite store, turn helpers).
    heavy = (
        "acpstack.schema._generated_v1_unstable",
        "acpstack.schema._generated_v2",
        "acpstack.schema._generated_methods_v2",
        "acpstack.agent._runtime",
        "acpstack.agent._store",
        "sqlite3",
        "acpstack.transports._remote_base",
        "acpstack.transports._envelope",
        "acpstack.transports._sse",
    )
    code = f"import sys; from acpstack import Agent, serve_stdio; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    # ...and they are still there when asked for.
    code = "from acpstack.agent import SessionAgent; from acpstack.schema import v1_unstable, UNSTABLE_METHODS; print(len(UNSTABLE_METHODS) > 0)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "True"


V2_MODULES = (
    "acpstack.schema._generated_v2",
    "acpstack.schema._generated_methods_v2",
    "acpstack.agent._v2_session",
    "acpstack.client._v2_results",
)
V2_CONNECTION = f"""
import asyncio, sys
from acpstack.agent import MemorySessionStore, SessionAgent, connect_agent
from acpstack.client import ClientRuntime, connect_client
from acpstack.transports import memory_pair

async def main(version):
    agent_side, client_side = memory_pair()
    runtime = ClientRuntime(protocol_version=version)
    agent = SessionAgent(store=MemorySessionStore())
    async with connect_agent(agent, agent_side), connect_client(runtime, client_side).connection:
        await runtime.initialize()
        await runtime.new_session("/tmp")
    print(runtime.agent.protocol_version, [m for m in {V2_MODULES!r} if m in sys.modules])

asyncio.run(main(int(sys.argv[1])))
"""


def test_protocol_v2_loads_only_for_a_v2_connection() -> None:
    # Both sides speak v2 (SessionAgent, ClientRuntime), yet a v1 connection imports none
    # of it: the v2 schema and the runtimes' v2 modules load when v2 is negotiated.
    for version, loaded in ((1, []), (2, list(V2_MODULES))):
        out = subprocess.run(
            [sys.executable, "-c", V2_CONNECTION, str(version)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.strip() == f"{version} {loaded!r}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def from_imports(path: Path) -> list[str]:
    """The modules a file imports from, absolute `from X import ...` and `import X` alike,
    and the private modules it takes from a package (`from acpstack.wire import _codec`)."""
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names if _private(a.name)]
    return names


def test_every_import_is_absolute() -> None:
    # A relative import would hide an arrow from the checks below (ruff's TID252 says the same).
    relative = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []


def package_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.parent != PACKAGE]


def test_no_layer_imports_the_facade() -> None:
    # `acpstack/__init__` re-exports the layers: importing it from one of them would be an
    # arrow running back up. `acpstack._version` and `acpstack._tasks` (ending owned tasks)
    # are the top-level modules they may use.
    problems = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in package_modules()
        for name in from_imports(path)
        if name == "acpstack"
    ]
    assert problems == []


def test_no_private_module_is_imported_from_outside_its_package() -> None:
    problems = []
    for path in package_modules():
        own = path.relative_to(PACKAGE).parts[0]
        for name in from_imports(path):
            parts = name.split(".")
            if parts[0] != "acpstack" or len(parts) < 3:
                continue
            private = any(part.startswith("_") for part in parts[2:])
            if private and parts[1] != own:
                problems.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert problems == []


def test_only_rpc_reaches_into_the_protocol_state() -> None:
    # Capabilities, the unstable flag and sending go through Connection and the peers.
    problems = [
        str(path.relative_to(PACKAGE))
        for path in package_modules()
        if path.relative_to(PACKAGE).parts[0] != "rpc" and "connection.state" in path.read_text()
    ]
    assert problems == []
