"""One writer per session across processes, as `SessionAgent` uses it.

With a store that keeps each session live on one process at a time (`SessionLeases`, e.g.
PostgreSQL shared by several servers), the runtime takes a session when it makes it live
(new, load, resume, fork) and lets it go when the session stops (close, delete, archive,
the client leaving). A request about a session that another process has live is answered
`SESSION_BUSY`; so is a write the store refuses because another process took the session
over (the runtime then drops the session here: it is no longer live in this process).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from acpstack.agent._store import SessionBusy, SessionLeases, SessionStore
from acpstack.agent._writer import writer_for
from acpstack.wire import RequestError

log = logging.getLogger("acpstack.agent")

# Not defined by ACP: an implementation-defined code (-32001..-32099) for a session that
# is live in another process of a shared store. Retrying later may succeed.
SESSION_BUSY = -32010


def session_busy(session_id: str) -> RequestError:
    """The error for a session that is live in another process."""
    return RequestError(
        SESSION_BUSY,
        f"Session {session_id} is live on another node; try again once it is closed there",
        {"reason": "session_busy", "sessionId": session_id},
    )


async def hold(store: SessionStore, session_id: str) -> None:
    """Make the session live in this process (a shared store's lease), or SESSION_BUSY."""
    if isinstance(store, SessionLeases):
        try:
            await writer_for(store).call_about(session_id, store.acquire, session_id)
        except SessionBusy:
            raise session_busy(session_id) from None
        except KeyError:
            raise RequestError.resource_not_found(session_id) from None


async def let_go(store: SessionStore, session_id: str) -> None:
    """Undo one `hold`; never raises (the lease ends with this process's presence anyway)."""
    if isinstance(store, SessionLeases):
        try:
            await writer_for(store).call(store.release, session_id)
        except Exception:
            log.warning("session %s: could not release it in the store", session_id, exc_info=True)


@contextlib.contextmanager
def refused_as_busy(session_id: str) -> Iterator[None]:
    """A write the store refuses because another process has the session: SESSION_BUSY."""
    try:
        yield
    except SessionBusy:
        raise session_busy(session_id) from None
