"""The prompt turns of `SessionAgent` (a mixin): one turn at a time per session, the
prompt recorded before the turn runs, cancellation (`session/cancel`, `$/cancel_request`),
and a turn that finds its session taken over by another process (`SESSION_BUSY`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from acpstack.agent._local_access import Fallback, LocalAccess
from acpstack.agent._session import Session
from acpstack.agent._store import SessionBusy
from acpstack.agent._turn import Turn
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


class TurnMethods:
    """`session/prompt` and `session/cancel` over the attributes `SessionAgent` sets."""

    sessions: dict[str, Session]
    fallback: Fallback
    _local: dict[str, LocalAccess]

    if TYPE_CHECKING:  # defined by SessionAgent

        async def _run_turn(self, turn: Turn) -> acp.StopReason: ...

        def _not_found(self, session_id: str) -> RequestError: ...

        async def _lost(self, session: Session) -> RequestError: ...

    def _active(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise self._not_found(session_id)
        return session

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
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
        except SessionBusy:
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

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self._cancel_turn(session, wait=False)

    async def _cancel_turn(self, session: Session, *, wait: bool = True) -> None:
        task = session.turn_task
        if task is None or task.done():
            return
        session.cancel_requested = True
        task.cancel()
        if wait and task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), 10)
