"""`Turn` helpers for notices, context compaction and elicitation (a mixin of `Turn`).

- `notice(title, ...)`: a fire-and-forget `notice` update. Notices are not history: it is
  sent, not recorded, and only if the client advertised `session.notices` (otherwise the
  text goes out as part of the agent's message, as the protocol suggests).
- `compaction()`: a `Compaction` whose `chunk()` streams the summary and whose `complete()`
  / `fail()` end it (`compaction_update` / `compaction_summary_chunk`, recorded like other
  updates); only if the client advertised `session.compaction`, else a no-op.
- `elicit_form(message, schema)` / `elicit_url(message, url)`: ask the user through the
  client (`elicitation/create`), scoped to this session; the client's answer comes back as
  an `ElicitationAnswer`. `ClientCapabilityMissing` when the client lacks that mode.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, capability_allows

if TYPE_CHECKING:
    from acpstack.agent._session import Session


class ClientCapabilityMissing(RuntimeError):
    """The client does not offer what a helper needs (e.g. `fs.writeTextFile`) and the
    turn's policy is ``"refuse"``. `message` says what could not be done and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ElicitationAnswer:
    """`action`: accept, decline or cancel (or a newer one: treat as not accepted)."""

    action: str
    content: dict[str, Any] = field(default_factory=dict)
    elicitation_id: str | None = None  # URL mode: pass to `complete_elicitation`

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class Compaction:
    """One context compaction shown to the client; see `TurnExtras.compaction`."""

    def __init__(self, session: Session, enabled: bool) -> None:
        self.session = session
        self.enabled = enabled
        self.compaction_id = uuid.uuid4().hex

    async def start(self) -> None:
        await self._status("in_progress")

    async def chunk(self, text: str) -> None:
        if self.enabled:
            await self.session.send(
                acp.CompactionSummaryChunk(
                    compaction_id=self.compaction_id, content=acp.TextContent(text=text)
                )
            )

    async def complete(self) -> None:
        await self._status("completed")

    async def fail(self, error: str) -> None:
        await self._status("failed", error=error)

    async def _status(self, status: str, *, error: str | None = None) -> None:
        if not self.enabled:
            return
        update = acp.CompactionUpdate(compaction_id=self.compaction_id, status=status)
        if error is not None:
            update.error = error
        await self.session.send(update)


class TurnExtras:
    session: Session

    async def say(self, text: str) -> None:
        raise NotImplementedError

    def _client_allows(self, *path: str) -> bool:
        return capability_allows(self.session.client.capabilities, path)

    async def notice(
        self, title: str, description: str | None = None, *, severity: str = "info"
    ) -> None:
        if not self._client_allows("session", "notices"):
            await self.say(f"\n\n**{title}**" + (f": {description}" if description else "") + "\n")
            return
        notice = acp.Notice(severity=severity, title=title)
        if description is not None:
            notice.description = description
        await self.session.client.session_update(self.session.session_id, notice)

    async def compaction(self) -> Compaction:
        """Start showing a compaction (`in_progress`); stream and end it on the result."""
        compaction = Compaction(self.session, self._client_allows("session", "compaction"))
        await compaction.start()
        return compaction

    async def elicit_form(
        self,
        message: str,
        schema: acp.ElicitationSchema | dict[str, Any],
        *,
        tool_call_id: str | None = None,
    ) -> ElicitationAnswer:
        """Ask for structured input (never secrets: use `elicit_url` for those)."""
        if isinstance(schema, dict):
            import msgspec

            schema = msgspec.convert(schema, acp.ElicitationSchema)
        params = acp.CreateElicitationRequest(
            message=message,
            mode="form",
            requested_schema=schema,
            session_id=self.session.session_id,
        )
        return await self._elicit(params, tool_call_id, None)

    async def elicit_url(
        self, message: str, url: str, *, tool_call_id: str | None = None
    ) -> ElicitationAnswer:
        """Send the user to a URL (sign in, pay, ...); accept only means they agreed to go.
        Call `complete_elicitation` when the interaction there has finished."""
        elicitation_id = uuid.uuid4().hex
        params = acp.CreateElicitationRequest(
            message=message,
            mode="url",
            url=url,
            elicitation_id=elicitation_id,
            session_id=self.session.session_id,
        )
        return await self._elicit(params, tool_call_id, elicitation_id)

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self.session.client.elicitation_complete(
            acp.CompleteElicitationNotification(elicitation_id=elicitation_id)
        )

    async def _elicit(
        self, params: acp.CreateElicitationRequest, tool_call_id: str | None, eid: str | None
    ) -> ElicitationAnswer:
        if tool_call_id is not None:
            params.tool_call_id = tool_call_id
        try:
            answer = await self.session.client.elicitation_create(params)
        except CapabilityError as exc:
            raise ClientCapabilityMissing(str(exc)) from exc
        content = answer.content if isinstance(answer.content, dict) else {}
        return ElicitationAnswer(str(answer.action), dict(content), eid)
