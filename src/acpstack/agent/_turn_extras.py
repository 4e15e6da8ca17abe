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
- Unstable, for agents that run subagents: `subagent(...)` announces a child session
  (`subagent_update`) and returns a `Subagent` whose `update()` / `running()` / `idle()`
  patch it; `session_message(...)` starts an inter-session message (`session_message`)
  whose `chunk()` streams its content (`session_message_chunk`). Both are recorded like
  other updates, and sent only if the client advertised `subagents` (else no-ops, like
  `compaction()`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, capability_allows

if TYPE_CHECKING:
    from acpstack.agent._session import Session
    from acpstack.schema import v1_unstable as acpu


class ClientCapabilityMissing(RuntimeError):
    """The client does not offer what a helper needs (e.g. `fs.writeTextFile`) and the
    turn's policy is ``"refuse"``. `message` says what could not be done and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message: str = message


@dataclass(frozen=True)
class ElicitationAnswer:
    """`action`: accept, decline or cancel (or a newer one: treat as not accepted)."""

    action: str
    content: dict[str, Any] = field(default_factory=dict)
    elicitation_id: str | None = None  # URL mode: pass to `complete_elicitation`

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (and, in form mode, `content` holds the answer)."""
        return self.action == "accept"


class Compaction:
    """One context compaction shown to the client; see `TurnExtras.compaction`."""

    def __init__(self, session: Session, enabled: bool) -> None:
        self.session: Session = session
        self.enabled: bool = enabled  # False: the client does not show compactions
        self.compaction_id: str = uuid.uuid4().hex

    async def start(self) -> None:
        """Show the compaction as `in_progress` (`TurnExtras.compaction` already did)."""
        await self._status("in_progress")

    async def chunk(self, text: str) -> None:
        """Stream more of the summary (`compaction_summary_chunk`)."""
        if self.enabled:
            await self.session.send(
                acp.CompactionSummaryChunk(
                    compaction_id=self.compaction_id, content=acp.TextContent(text=text)
                )
            )

    async def complete(self) -> None:
        """The compaction finished (`completed`)."""
        await self._status("completed")

    async def fail(self, error: str) -> None:
        """The compaction failed; `error` is shown to the user."""
        await self._status("failed", error=error)

    async def _status(self, status: str, *, error: str | None = None) -> None:
        if not self.enabled:
            return
        update = acp.CompactionUpdate(compaction_id=self.compaction_id, status=status)
        if error is not None:
            update.error = error
        await self.session.send(update)


class Subagent:
    """A child session announced on this session (`subagent_update`); see
    `TurnExtras.subagent`. Every call is a patch: a field left out keeps its value, None
    clears it. `enabled` is False when the client does not take subagents (calls do
    nothing)."""

    def __init__(self, session: Session, session_id: str, enabled: bool) -> None:
        self.session: Session = session
        self.session_id: str = session_id
        self.enabled: bool = enabled

    async def update(
        self,
        *,
        title: str | None | UnsetType = UNSET,
        description: str | None | UnsetType = UNSET,
        state: str | acpu.StateUpdate | None | UnsetType = UNSET,
        cwd: str | None | UnsetType = UNSET,
        additional_directories: list[str] | None | UnsetType = UNSET,
        capabilities: acpu.SubagentSessionCapabilities | None | UnsetType = UNSET,
    ) -> None:
        """`state`: ``"running"``, ``"idle"``, ``"requires_action"``, ``"unknown"`` or a
        `StateUpdate` (e.g. `IdleStateUpdate(stop_reason=...)`: use `idle()`)."""
        snapshot = _state(state) if isinstance(state, str) else state
        if not self.enabled:
            return
        from acpstack.schema import v1_unstable as acpu

        await _send(
            self.session,
            acpu.SubagentUpdate(
                session_id=self.session_id,
                title=title,
                description=description,
                state=snapshot,
                cwd=cwd,
                additional_directories=additional_directories,
                capabilities=capabilities,
            ),
        )

    async def running(self) -> None:
        """The child is working."""
        await self.update(state="running")

    async def requires_action(self) -> None:
        """The child waits for the user (e.g. a permission it asked for)."""
        await self.update(state="requires_action")

    async def idle(
        self, stop_reason: acp.StopReason | None = None, *, error: acp.Error | None = None
    ) -> None:
        """The child finished its foreground work (it may be messaged again)."""
        from acpstack.schema import v1_unstable as acpu

        state = acpu.IdleStateUpdate()
        if stop_reason is not None:
            state.stop_reason = stop_reason
        if error is not None:
            state.error = acpu.Error(code=error.code, message=error.message, data=error.data)
        await self.update(state=state)


class InterSessionMessage:
    """A message between two sessions, shown in this session's transcript
    (`session_message` / `session_message_chunk`); see `TurnExtras.session_message`."""

    def __init__(self, session: Session, message_id: str, enabled: bool) -> None:
        self.session: Session = session
        self.message_id: str = message_id
        self.enabled: bool = enabled

    async def chunk(self, content: str | acp.ContentBlock) -> None:
        """Append to the message's content (text, or any content block)."""
        if not self.enabled:
            return
        from acpstack.schema import v1_unstable as acpu

        block: Any = acp.TextContent(text=content) if isinstance(content, str) else content
        await _send(
            self.session, acpu.SessionMessageChunk(message_id=self.message_id, content=block)
        )

    async def update(
        self,
        *,
        content: list[acp.ContentBlock] | None | UnsetType = UNSET,
        sender_session_id: str | None | UnsetType = UNSET,
        recipient_session_id: str | None | UnsetType = UNSET,
        sender_message_id: str | None | UnsetType = UNSET,
        recipient_message_id: str | None | UnsetType = UNSET,
    ) -> None:
        """Upsert the message: a field left out keeps its value, None clears it; `content`
        replaces what the chunks streamed (None or [] clears it)."""
        if not self.enabled:
            return
        from acpstack.schema import v1_unstable as acpu

        blocks: Any = content  # stable content blocks encode the same
        await _send(
            self.session,
            acpu.SessionMessage(
                message_id=self.message_id,
                content=blocks,
                sender_session_id=sender_session_id,
                recipient_session_id=recipient_session_id,
                sender_message_id=sender_message_id,
                recipient_message_id=recipient_message_id,
            ),
        )


async def _send(session: Session, update: Any) -> None:
    """Send an update only unstable connections know (`Session.send` is typed for the
    stable ones; the wire takes both)."""
    await session.send(update)


def _state(name: str) -> Any:
    """The state snapshot named `name` (ValueError for a name ACP does not define)."""
    from acpstack.schema import v1_unstable as acpu

    kinds: dict[str, Any] = {
        "running": acpu.RunningStateUpdate,
        "idle": acpu.IdleStateUpdate,
        "requires_action": acpu.RequiresActionStateUpdate,
        "unknown": acpu.UnknownStateUpdate,
    }
    if name not in kinds:
        raise ValueError(f"unknown subagent state {name!r}: use one of {', '.join(kinds)}")
    return kinds[name]()


class TurnExtras:
    """Notices, compaction, subagents and elicitation for `Turn` (see the module's doc)."""

    session: Session

    async def say(self, text: str) -> None:
        raise NotImplementedError

    def _client_allows(self, *path: str) -> bool:
        return capability_allows(self.session.client.capabilities, path)

    async def notice(
        self, title: str, description: str | None = None, *, severity: str = "info"
    ) -> None:
        """Tell the user something beside the conversation (`severity`: "info", "warning"
        or "error"): a `notice` update when the client advertised `session.notices`, else
        a line of the agent's message. Notices are not recorded in the history."""
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

    async def subagent(
        self,
        session_id: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        cwd: str | None = None,
        state: str | None = "running",
    ) -> Subagent:
        """Announce a child session of this session (a fresh id unless `session_id` is
        given) before any message names it; patch it later through the `Subagent`.
        Unstable: sent only if the client advertised `subagents`."""
        child = Subagent(
            self.session, session_id or uuid.uuid4().hex, self._client_allows("subagents")
        )
        await child.update(
            title=UNSET if title is None else title,
            description=UNSET if description is None else description,
            cwd=UNSET if cwd is None else cwd,
            state=UNSET if state is None else state,
        )
        return child

    async def session_message(
        self,
        *,
        sender_session_id: str | None = None,
        recipient_session_id: str | None = None,
        text: str | None = None,
        message_id: str | None = None,
    ) -> InterSessionMessage:
        """Start a message between two sessions in this session's transcript (e.g. this
        session to a `Subagent`): who sends it to whom, and its `text` if already known;
        stream more with `chunk()`. Unstable: sent only if the client advertised
        `subagents`."""
        message = InterSessionMessage(
            self.session, message_id or uuid.uuid4().hex, self._client_allows("subagents")
        )
        await message.update(
            sender_session_id=UNSET if sender_session_id is None else sender_session_id,
            recipient_session_id=UNSET if recipient_session_id is None else recipient_session_id,
            content=UNSET if text is None else [acp.TextContent(text=text)],
        )
        return message

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
        """Tell the client the interaction of a URL elicitation finished (the answer's
        `elicitation_id`), so it can stop waiting for it."""
        await self.session.flush()
        await self.session.client.elicitation_complete(
            acp.CompleteElicitationNotification(elicitation_id=elicitation_id)
        )

    async def _elicit(
        self, params: acp.CreateElicitationRequest, tool_call_id: str | None, eid: str | None
    ) -> ElicitationAnswer:
        if tool_call_id is not None:
            params.tool_call_id = tool_call_id
        await self.session.flush()
        try:
            answer = await self.session.client.elicitation_create(params)
        except CapabilityError as exc:
            raise ClientCapabilityMissing(str(exc)) from exc
        content = answer.content if isinstance(answer.content, dict) else {}
        return ElicitationAnswer(str(answer.action), dict(content), eid)
