"""Import the optional `remote` dependencies on first use, with a message that says how to get them."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = 'in the acpstack checkout, pip install ".[remote]" (or pip install uvicorn httptools websockets h11)'


class MissingExtraError(ImportError):
    """An optional dependency of remote ACP is not installed."""


def require_extra(module: str) -> ModuleType:
    """Import `module`, or fail with a message naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingExtraError(
            f"remote ACP needs the optional package `{top}`, which is not installed: {INSTALL_HINT}"
        ) from exc
