"""Several clients on one session (after the multi-client attach RFD, ACP PR #533): a
connection attaches to a live session that another connection of the same principal
holds, as an observer (it sees the session's stream) or a controller (it may also prompt,
cancel and answer the agent's requests).

`_acpstack/session/attach {sessionId, role: "observer" | "controller", history}` and
`_acpstack/session/detach {sessionId}` (ACP's extension form; the RFD's own names
`session/attach` and `session/detach` are accepted too) are answered by the server; the agent behind the attaching connection never
sees them, nor anything the attached client sends about that session (a controller's
requests go to the owning connection's agent, their answers come back).

- Every notification the owner's agent sends about the session goes to each attached
  client as well; every request it sends (a permission, an elicitation) goes to the
  owner's client and to each controller, under an id of its own per client.
- The first answer wins: it goes to the agent; the other clients get `$/cancel_request`
  for their copy, and a later answer is dropped.
- With `history: "pending"` (the default) an attaching controller is sent the requests
  still waiting for an answer; `"none"` sends nothing from before.
- When the owner's connection closes, the attached clients get an error answer for their
  requests still in flight, and the attachment ends.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from acpstack.transports import Envelope
from acpstack.wire import INTERNAL_ERROR, INVALID_PARAMS, RequestId

if TYPE_CHECKING:
    from acpstack.server._connection import RemoteConnection

log = logging.getLogger("acpstack.server")

ATTACH = frozenset({"_acpstack/session/attach", "session/attach"})
DETACH = frozenset({"_acpstack/session/detach", "session/detach"})
SHARING_METHODS = ATTACH | DETACH
ROLES = ("observer", "controller")
NOT_FOUND = -32002  # ACP's "resource not found"
Role = Literal["observer", "controller"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode
_ids = itertools.count(1)


@dataclass
class Asked:
    """A request of the owner's agent about a shared session, not answered yet."""

    frame: bytes
    copies: dict[str, RequestId] = field(default_factory=dict)  # connection id -> its id


@dataclass
class Share:
    """A session of the owner's, and the connections attached to it."""

    session_id: str
    attached: dict[str, tuple[RemoteConnection, Role]] = field(default_factory=dict)
    asked: dict[RequestId, Asked] = field(default_factory=dict)  # by the agent's id


@dataclass
class Attachment:
    """On the attached connection: which session of which owner, in which role."""

    owner: RemoteConnection
    role: Role


def with_id(frame: bytes, request_id: RequestId) -> bytes:
    message = _decode(frame)
    message["id"] = request_id
    return _encode(message)


def answer(request_id: RequestId, result: Any) -> bytes:
    return _encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id: RequestId, code: int, message: str) -> bytes:
    return _encode(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


def cancel(request_id: RequestId) -> bytes:
    return _encode(
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
    )


class Sharing:
    """What one connection shares (as owner) and what it is attached to."""

    def __init__(self, connection: RemoteConnection) -> None:
        self.connection = connection
        self.shares: dict[str, Share] = {}  # our sessions others are attached to
        self.attachments: dict[str, Attachment] = {}  # sessions of others we are attached to
        # requests a controller sent to our agent: our id -> (controller, its id, session)
        self.forwarded: dict[RequestId, tuple[RemoteConnection, RequestId, str | None]] = {}
        # copies of an owner's requests sent to our client: our id -> (owner, session, agent's id)
        self.copies: dict[RequestId, tuple[RemoteConnection, str, RequestId]] = {}
        # copies settled by another client: our client's late answers to them are dropped
        self.retired: set[RequestId] = set()
        # our agent's requests that an attached client answered first
        self.answered_elsewhere: set[RequestId] = set()

    @property
    def active(self) -> bool:
        """Whether anything is shared or attached (else nothing here needs a look)."""
        return bool(
            self.shares
            or self.attachments
            or self.copies
            or self.retired
            or self.forwarded
            or self.answered_elsewhere
        )

    # -- the attached side: what its client sends ----------------------------------------

    async def handle(self, frame: bytes, env: Envelope, owners: Iterable[RemoteConnection]) -> bool:
        """Handle a client message that concerns sharing; False when it does not."""
        if env.kind == "request" and env.method in SHARING_METHODS:
            await self._attach_or_detach(frame, env, owners)
            return True
        if env.kind == "response":
            if env.id in self.retired:
                self.retired.discard(env.id)
                return True  # another client answered first
            if env.id in self.copies:
                owner, session_id, agent_id = self.copies.pop(env.id)
                await owner.sharing.settle(session_id, agent_id, frame, self.connection.id)
                return True
            return not self.own_answer(env)
        attachment = self.attachments.get(env.session_id or "")
        if attachment is None or env.kind not in ("request", "notification"):
            return False
        if attachment.role != "controller":
            if env.kind == "request":
                self._reply(
                    env.session_id, error(env.id, INVALID_PARAMS, "an observer may not send this")
                )
            return True
        await attachment.owner.sharing.from_controller(self.connection, frame, env)
        return True

    async def _attach_or_detach(
        self, frame: bytes, env: Envelope, owners: Iterable[RemoteConnection]
    ) -> None:
        params = (_decode(frame).get("params") or {}) if frame else {}
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            self._reply(None, error(env.id, INVALID_PARAMS, "sessionId is required"))
            return
        if env.method in DETACH:
            self.leave(session_id)
            self._reply(session_id, answer(env.id, {}))
            return
        role = params.get("role", "observer")
        history = params.get("history", "pending")
        if role not in ROLES or history not in ("pending", "none"):
            self._reply(
                session_id,
                error(
                    env.id,
                    INVALID_PARAMS,
                    'role is "observer" or "controller"; history "pending" or "none"',
                ),
            )
            return
        owner = next((o for o in owners if session_id in o.session_ids), None)
        if owner is None:
            self._reply(
                session_id,
                error(
                    env.id, NOT_FOUND, f"no live session {session_id} to attach to on this server"
                ),
            )
            return
        self.leave(session_id)
        self.attachments[session_id] = Attachment(owner, role)
        self._reply(session_id, answer(env.id, {"sessionId": session_id, "role": role}))
        owner.sharing.add(self.connection, session_id, role, history == "pending")
        log.info(
            "connection %s: attached to session %s as %s", self.connection.id, session_id, role
        )

    def leave(self, session_id: str) -> None:
        attachment = self.attachments.pop(session_id, None)
        if attachment is not None:
            attachment.owner.sharing.remove(self.connection.id, session_id)

    def _reply(self, session_id: str | None, frame: bytes) -> None:
        self.connection.stream_to_client(session_id).push(frame)

    # -- the owner's side ---------------------------------------------------------------

    def add(self, other: RemoteConnection, session_id: str, role: Role, pending: bool) -> None:
        share = self.shares.setdefault(session_id, Share(session_id))
        share.attached[other.id] = (other, role)
        if pending and role == "controller":
            for agent_id, asked in share.asked.items():
                self._copy(share, agent_id, asked, other)

    def remove(self, connection_id: str, session_id: str) -> None:
        share = self.shares.get(session_id)
        if share is None:
            return
        share.attached.pop(connection_id, None)
        for asked in share.asked.values():
            asked.copies.pop(connection_id, None)
        if not share.attached:
            del self.shares[session_id]

    def from_agent(self, frame: bytes, env: Envelope) -> bool:
        """Our agent sent `frame`: pass it to whoever shares its session. True when it is
        an answer meant for a controller (and so not for our own client)."""
        if env.kind == "response":
            forwarded = self.forwarded.pop(env.id, None)
            if forwarded is None:
                return False
            controller, their_id, session_id = forwarded
            controller.stream_to_client(session_id).push(with_id(frame, their_id))
            return True
        share = self.shares.get(env.session_id or "")
        if share is None:
            return False
        if env.kind == "notification":
            for other, _role in share.attached.values():
                other.stream_to_client(share.session_id).push(frame)
        elif env.kind == "request":
            asked = share.asked[env.id] = Asked(frame)
            for other, role in share.attached.values():
                if role == "controller":
                    self._copy(share, env.id, asked, other)
        return False

    def _copy(
        self, share: Share, agent_id: RequestId, asked: Asked, other: RemoteConnection
    ) -> None:
        their_id = f"acpstack-shared-{next(_ids)}"
        asked.copies[other.id] = their_id
        other.sharing.copies[their_id] = (self.connection, share.session_id, agent_id)
        other.stream_to_client(share.session_id).push(with_id(asked.frame, their_id))

    def own_answer(self, env: Envelope) -> bool:
        """Our client answered our agent's `env.id`; False when an attached client
        answered it first (this answer is then dropped)."""
        if env.id in self.answered_elsewhere:
            self.answered_elsewhere.discard(env.id)
            return False
        for share in self.shares.values():
            asked = share.asked.pop(env.id, None)
            if asked is not None:
                self._settled(share, asked)
                break
        return True

    async def settle(self, session_id: str, agent_id: RequestId, frame: bytes, by: str) -> None:
        """An attached client answered our agent's request `agent_id`: the first answer
        goes to the agent, the others are told it is settled."""
        share = self.shares.get(session_id)
        asked = share.asked.pop(agent_id, None) if share is not None else None
        if share is None or asked is None:
            return  # answered already
        asked.copies.pop(by, None)
        self._settled(share, asked)
        self.answered_elsewhere.add(agent_id)
        self.connection.stream_to_client(session_id).push(cancel(agent_id))
        await self.connection.send(with_id(frame, agent_id))

    def _settled(self, share: Share, asked: Asked) -> None:
        """Tell every other client that had a copy of the request that it is settled."""
        for connection_id, their_id in asked.copies.items():
            entry = share.attached.get(connection_id)
            if entry is not None:
                other = entry[0].sharing
                if other.copies.pop(their_id, None) is not None:
                    other.retired.add(their_id)
                entry[0].stream_to_client(share.session_id).push(cancel(their_id))

    async def from_controller(
        self, controller: RemoteConnection, frame: bytes, env: Envelope
    ) -> None:
        """A controller's request or notification about our session goes to our agent."""
        if env.kind == "request":
            our_id = f"acpstack-controller-{next(_ids)}"
            self.forwarded[our_id] = (controller, env.id, env.session_id)
            frame = with_id(frame, our_id)
            env = Envelope("request", our_id, env.method, env.session_id)
        try:
            await self.connection.deliver(frame, env, env.session_id)
        except ConnectionResetError:
            forwarded = self.forwarded.pop(env.id, None) if env.kind == "request" else None
            if forwarded is not None:
                controller.stream_to_client(env.session_id).push(
                    error(forwarded[1], INTERNAL_ERROR, "the session's connection has closed")
                )

    def closed(self) -> None:
        """Our connection closed: end every attachment, ours and others'."""
        for attached_to in list(self.attachments):
            self.leave(attached_to)
        for controller, their_id, session_id in self.forwarded.values():
            controller.stream_to_client(session_id).push(
                error(their_id, INTERNAL_ERROR, "the connection that holds the session closed")
            )
        self.forwarded.clear()
        for share in self.shares.values():
            for other, _role in share.attached.values():
                other.sharing.attachments.pop(share.session_id, None)
        self.shares.clear()
