"""Prompt turns of a `SessionAgent` (a mixin): `session/prompt` runs the author's `prompt`
as one turn, at most one at a time per session; `session/cancel` cancels it. A turn that
finds its session taken over by another process (a shared store) answers `SESSION_BUSY`.

A turn is cancelled by cancelling its task (session/cancel, `$/cancel_request` of the
prompt, or the session stopping); it then answers `stopReason: "cancelled"`, whatever the
author's code raised while it unwound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from acpstack._tasks import cancel_and_wait
from acpstack.agent._local_access import Fallback, LocalAccess
from acpstack.agent._store import SessionBusy
from acpstack.agent._turn import Turn
from acpstack.agent._turn_extras import ClientCapabilityMissing
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.agent._session import Session

log = logging.getLogger("acpstack.agent")


class PromptMethods:
    """`session_prompt` / `session_cancel` over the `sessions` `SessionAgent` keeps."""

    sessions: dict[str, Session]
    fallback: Fallback
    _local: dict[str, LocalAccess]  # per active session, made on its first prompt

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        async def prompt(self, turn: Turn) -> acp.StopReason | None:
            raise NotImplementedError

        def _not_found(self, session_id: str) -> RequestError:
            raise NotImplementedError

        async def _lost(self, session: Session) -> RequestError:
            raise NotImplementedError

    def _active(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise self._not_found(session_id)
        return session

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        """`session/prompt`: run one turn of the author's `prompt` in an active session
        (-32602 while another turn runs in it)."""
        session = self._active(params.session_id)
        try:
            turn = self._start_turn(session, list(params.prompt))
            task = asyncio.current_task()
            assert task is not None
            session.turn_task = task
            try:
                return acp.PromptResponse(stop_reason=await self._run_turn(turn))
            finally:
                session.turn_task = None
        except SessionBusy:  # another process took the session over (a shared store)
            raise await self._lost(session) from None

    def _start_turn(
        self, session: Session, prompt: list[acp.ContentBlock], message_id: str | None = None
    ) -> Turn:
        """Record the prompt and make its turn (-32602 while another turn runs)."""
        if session.turn_task is not None:
            raise RequestError.invalid_params(
                {"sessionId": session.session_id},
                "A prompt turn is already running in this session",
            )
        session.cancel_requested = False
        session.record_prompt(prompt, message_id)
        local = self._local.get(session.session_id)
        if local is None:
            local = LocalAccess(session.session_id, session.cwd, session.additional_directories)
            self._local[session.session_id] = local
        return Turn(session, prompt, fallback=self.fallback, local=local)

    async def _run_turn(self, turn: Turn) -> acp.StopReason:
        """Run the author's `prompt`: its stop reason, "cancelled" once the client cancelled
        it (session/cancel, or $/cancel_request of the prompt); a shutdown's cancellation
        (the connection closed) goes on as CancelledError."""
        session = turn.session
        try:
            stop = await self.prompt(turn)
        except asyncio.CancelledError:
            if session.cancel_requested or not session.client.connection.closed:
                return "cancelled"  # session/cancel or $/cancel_request: the client asked
            raise  # the connection is going away: not the client's cancel, nobody to answer
        except (ClientCapabilityMissing, CapabilityError) as exc:
            if session.cancel_requested:
                return "cancelled"
            stop = await _missing_capability(turn, exc)
        except Exception:
            if session.cancel_requested:
                return "cancelled"
            with contextlib.suppress(Exception):  # none is left pending
                await turn.fail_unfinished("The agent stopped on an error.")
            raise
        if session.cancel_requested:
            return "cancelled"
        return stop or "end_turn"

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        """`session/cancel`: cancel the session's running turn, if any (its prompt then
        answers "cancelled"); an unknown session is ignored (it is a notification)."""
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self._cancel_turn(session, wait=False)

    async def _cancel_turn(self, session: Session, *, wait: bool = True) -> None:
        task = session.turn_task
        if task is None or task.done():
            return
        session.cancel_requested = True
        if wait and task is not asyncio.current_task():
            await cancel_and_wait(task, timeout=10)
        else:
            task.cancel()


async def _missing_capability(
    turn: Turn, exc: ClientCapabilityMissing | CapabilityError
) -> acp.StopReason:
    """A turn that needed something the client does not offer ends normally, and says why
    (a client must not see -32603 for what it chose not to offer)."""
    message = exc.message if isinstance(exc, ClientCapabilityMissing) else str(exc)
    log.warning("session %s: %s", turn.session.session_id, message)
    await turn.fail_unfinished(message)
    await turn.say(f"\n\nI could not finish this: {message}\n")
    return "end_turn"
