"""One lock per session id for the requests that activate, stop or remove a session.

`session/delete` (and close, archive, load, resume) first takes the session out of the
active ones and then waits for its turn to end. Without a lock, a `session/resume` of the
same id that arrives meanwhile finds the row still stored and activates it again, and the
delete then removes the row under the active session: its next prompt failed with -32603
(the store has no such session). Each of these requests now runs alone per session id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class SessionLocks:
    """`async with locks.exclusive(session_id):` one lifecycle change at a time per id
    (a lock lives only while somebody holds or waits for it)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def exclusive(self, session_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(session_id, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            _, users = self._locks[session_id]
            if users == 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)
