"""Python proxies run inside the conductor's process, on an in-memory link.

A chain's cost is its process hops: every message through a proxy process is a pipe write,
a wake-up of that process, and a pipe write back. A `Proxy` written in Python needs none of
that: the conductor runs it as a task on its own event loop, connected by an in-memory pair
of transports. The proxy sees exactly what it would see over a pipe (the same
`proxy/initialize`, `proxy/successor` and routing), since it is the same `Proxy.serve` on
the same bytes. When its `serve` ends, the conductor's end reads end of input with a reason,
and the chain ends as it does when a proxy process exits.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import logging
import sys
from pathlib import Path

from acpstack.proxy._proxy import Proxy
from acpstack.transports import DataCallback, EofCallback, MemoryTransport, memory_pair

log = logging.getLogger("acpstack.proxy")


class InProcessEnd:
    """The conductor's end of the link to an in-process proxy (a `Transport`). Closing it
    ends the proxy's input; `close` returns once the proxy's task has ended."""

    def __init__(self, proxy: Proxy, name: str) -> None:
        self._ours, theirs = memory_pair()
        self._reason: str | None = None
        self._task = asyncio.get_running_loop().create_task(
            self._serve(proxy, theirs, name), name=f"acpstack {name}"
        )

    async def _serve(self, proxy: Proxy, theirs: MemoryTransport, name: str) -> None:
        try:
            await proxy.serve(theirs)
            self._reason = "it stopped serving"
        except asyncio.CancelledError:
            self._reason = "it was cancelled"
            raise
        except Exception as exc:
            self._reason = f"it raised {type(exc).__name__}: {exc}"
            log.error("%s raised", name, exc_info=True)
        finally:
            await theirs.close()

    def start_reading(self, on_data: DataCallback, on_eof: EofCallback) -> None:
        self._ours.start_reading(on_data, on_eof)

    def pause_reading(self) -> None:
        self._ours.pause_reading()

    def resume_reading(self) -> None:
        self._ours.resume_reading()

    def write(self, data: bytes) -> None:
        self._ours.write(data)

    async def drain(self) -> None:
        await self._ours.drain()

    def write_buffer_size(self) -> int:
        return 0

    async def settle(self) -> None:
        """Wait (briefly) for the proxy's task, so that `close_reason` can say how it ended.
        (`asyncio.wait`: the task's own end never raises here, and a cancellation of the
        caller still does.)"""
        if not self._task.done():
            await asyncio.wait({self._task}, timeout=5)

    def close_reason(self) -> str | None:
        return self._reason

    async def close(self) -> None:
        await self._ours.close()
        if not self._task.done():
            # Its input ends now, so `serve` returns; a proxy stuck elsewhere is cancelled.
            done, _ = await asyncio.wait({self._task}, timeout=5)
            if not done:
                self._task.cancel()
                await asyncio.wait({self._task})  # (its end: `_serve` raises nothing else)


def load_proxy(spec: str) -> Proxy:
    """A `Proxy` from `path.py[:Class]`: the file is imported as a module (its
    `if __name__ == "__main__"` block does not run) and `Class` made with no arguments;
    without `:Class`, the one `Proxy` subclass the file defines. Raises `ValueError`."""
    path_text, _, class_name = spec.partition(":")
    path = Path(path_text)
    if not path.is_file():
        raise ValueError(f"no proxy file {path_text!r}")
    module_name = f"acpstack_proxy_{path.stem}_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ValueError(f"cannot import {path_text!r} as Python")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # dataclasses and typing look their module up
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ValueError(f"importing {path_text!r} failed: {type(exc).__name__}: {exc}") from exc
    if class_name:
        found = getattr(module, class_name, None)
        if not (inspect.isclass(found) and issubclass(found, Proxy)):
            raise ValueError(f"{path_text!r} has no Proxy subclass named {class_name!r}")
        return found()
    defined = [
        value
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, Proxy) and value.__module__ == module_name
    ]
    if len(defined) != 1:
        raise ValueError(
            f"{path_text!r} defines {len(defined)} Proxy subclasses: name one as {path_text}:Class"
        )
    return defined[0]()
