"""Every public name is exported on purpose and resolves; private modules stay private."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "acpstack",
    "acpstack.schema",
    "acpstack.wire",
    "acpstack.transports",
    "acpstack.local",
    "acpstack.rpc",
    "acpstack.agent",
    "acpstack.client",
    "acpstack.server",
    "acpstack.testing",
    "acpstack.conformance",
    "acpstack.traffic",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported and len(exported) == len(set(exported))
    for attr in exported:
        assert getattr(module, attr) is not None, f"{name}.{attr}"
        assert not attr.startswith("_") or attr == "__version__"


def test_the_names_design_md_promises() -> None:
    import acpstack

    for attr in (
        "Agent",
        "Client",
        "ClientPeer",
        "AgentPeer",
        "RequestError",
        "ConnectionClosed",
        "spawn_agent",
        "serve_stdio",
    ):
        assert attr in acpstack.__all__, attr
    from acpstack.agent import SessionAgent, SqliteSessionStore, Turn  # noqa: F401
    from acpstack.client import ClientRuntime  # noqa: F401


def test_public_classes_live_in_private_modules_but_are_reexported() -> None:
    import acpstack

    for attr in ("Agent", "Client"):
        cls = getattr(acpstack, attr)
        assert cls.__module__.split(".")[-1].startswith("_")


def test_client_keeps_exporting_the_names_that_moved_to_local() -> None:
    # Workspace, FileSystem and the terminals moved to acpstack.local (shared with agents);
    # code that imports them from acpstack.client gets the very same objects.
    import acpstack.client
    import acpstack.local

    for attr in ("FileSystem", "Workspace", "TerminalManager", "TerminalExit", "TerminalOutput"):
        assert attr in acpstack.client.__all__, attr
        assert getattr(acpstack.client, attr) is getattr(acpstack.local, attr), attr
    from acpstack.client import ClientRuntime

    runtime = ClientRuntime()
    assert isinstance(runtime.fs, acpstack.local.FileSystem)
    assert isinstance(runtime.terminals, acpstack.local.TerminalManager)
