"""A live session of a `SessionAgent`: its settings, its running turn, its history.

Every `session/update` goes through `Session.send`, which records it in the store (one
committed transaction) before writing it to the wire, so an update the client saw is
never missing from the history, even if the agent is killed right after.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from acpstack.agent._store import SessionRecord, SessionStore
from acpstack.schema import v1 as acp
from acpstack.wire import METHOD_NOT_FOUND, RequestError

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.agent._cancel import CancelRegistry
    from acpstack.agent._mcp import McpConnections

log = logging.getLogger("acpstack.agent")

UPDATE = "update"  # an update the agent sent
PROMPT = "prompt"  # a user prompt block, stored as a user_message_chunk update

_encode = msgspec.json.Encoder().encode
T = TypeVar("T")


@dataclass(slots=True)  # one per open session: no per-instance __dict__
class Session:
    """One active session of a `SessionAgent` (`SessionAgent.sessions` holds them by id).

    Its settings mirror the stored `SessionRecord` (`save` writes them back); `client` is
    the connection's `ClientPeer`; `mcp` the session's MCP servers (with the `mcp` option);
    `turn_task` the running prompt turn, if any; `state` is free for the author's data;
    `cancels` what a v2 client may cancel now (`tool_call/cancel`, `terminal/cancel`;
    None on v1, which has neither)."""

    session_id: str
    cwd: str
    client: ClientPeer
    store: SessionStore
    additional_directories: list[str] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)
    mode_id: str | None = None
    config_values: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    # The client's `systemPrompt` ({"mode": "append"|..., "text": ...}), for the author's
    # model: added to (or replacing) the agent's own instructions. None: not given.
    system_prompt: dict[str, str] | None = None
    mcp: McpConnections | None = None
    turn_task: asyncio.Task[Any] | None = None
    start_task: asyncio.Task[None] | None = None  # the on_session_start hook while it runs
    cancel_requested: bool = False
    cancels: CancelRegistry | None = None
    # Free for the author's own per-session data.
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def roots(self) -> list[str]:
        """The session's workspace roots: cwd first, then the additional directories."""
        return [self.cwd, *self.additional_directories]

    async def send(self, update: acp.SessionUpdate) -> None:
        """Record `update` in the store, then send it to the client."""
        payload = _encode(update)
        self.store.append_event(self.session_id, UPDATE, payload)
        await self.client.session_update_encoded(self.session_id, payload)

    def record_prompt(self, blocks: list[acp.ContentBlock], message_id: str | None = None) -> None:
        """Record a user prompt in the history (one `user_message_chunk` per block, sharing
        `message_id`, a fresh one if None), so `session/load` replays it."""
        mid = message_id or uuid.uuid4().hex
        for block in blocks:
            self.store.append_event(
                self.session_id,
                PROMPT,
                _encode(acp.UserMessageChunk(content=block, message_id=mid)),
            )

    async def ask_permission(
        self, tool_call: acp.ToolCallUpdate, options: list[acp.PermissionOption]
    ) -> Any:
        """Ask the client's user about `tool_call` (`session/request_permission`); the
        outcome (`acp.SelectedPermissionOutcome`, `acp.CancelledRequestPermissionOutcome`
        or anything else, which never counts as approval; None: see `permission_answer`)."""
        params = acp.RequestPermissionRequest(
            session_id=self.session_id, tool_call=tool_call, options=options
        )
        request = self.client.session_request_permission(params)
        answer = await permission_answer(self.session_id, request)
        return None if answer is None else answer.outcome

    async def replay(self) -> int:
        """Send the whole recorded history (prompts and updates) as session/update, in order."""
        count = 0
        for event in self.store.events(self.session_id):
            if event.kind not in (UPDATE, PROMPT):
                continue
            await self.client.session_update_encoded(self.session_id, event.payload)
            count += 1
        return count

    def save(self) -> None:
        """Write the session's settings back to the store (`updated_at` moves)."""
        self.store.update(
            self.session_id,
            cwd=self.cwd,
            additional_directories=list(self.additional_directories),
            mcp_servers=list(self.mcp_servers),
            mode_id=self.mode_id,
            config_values=dict(self.config_values),
            title=self.title,
        )

    @classmethod
    def from_record(cls, record: SessionRecord, client: ClientPeer, store: SessionStore) -> Session:
        """The live session of a stored record, on `client`'s connection."""
        return cls(
            session_id=record.session_id,
            cwd=record.cwd,
            client=client,
            store=store,
            additional_directories=list(record.additional_directories),
            mcp_servers=list(record.mcp_servers),
            mode_id=record.mode_id,
            config_values=dict(record.config_values),
            title=record.title,
            system_prompt=record.meta.get("system_prompt"),
        )


async def permission_answer(session_id: str, request: Awaitable[T]) -> T | None:
    """The client's answer to `session/request_permission`, or None (a refusal) when it
    answered with an error: -32601 from a client without a permission handler (the base
    `Client` answers so because it never approves), or any other error or an invalid
    result. The user was not asked, so nothing is approved; the turn goes on (relaying
    the client's own error as the answer to its `session/prompt` helped nobody)."""
    try:
        return await request
    except RequestError as err:
        if err.code == METHOD_NOT_FOUND:
            log.info(
                "session %s: the client has no permission handler (-32601): a refusal", session_id
            )
        else:
            log.warning(
                "session %s: the client answered session/request_permission with an error "
                "(%s): a refusal",
                session_id,
                err,
            )
        return None
