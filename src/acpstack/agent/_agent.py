"""`Agent`: what an agent author implements, and `ClientPeer`: the handle to the client."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from acpstack.agent._generated_peer import AgentHandlers, ClientPeerMethods
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import (
    CapabilityError,
    DroppedMessage,
    RequestError,
    capability_allows,
)

if TYPE_CHECKING:
    from acpstack.rpc import Connection

log = logging.getLogger("acpstack.agent")
_encode = msgspec.json.Encoder().encode


class ClientPeer(ClientPeerMethods):
    """Typed calls from the agent to the client (one per method: `ClientPeerMethods`).

    Every call checks what the client advertised in `initialize` first and raises
    `CapabilityError` instead of sending something the client did not allow.
    """

    def __init__(self, connection: Connection, extensions: tuple[str, ...] = ()) -> None:
        self.connection = connection
        self.extensions = extensions  # the frozen extensions the connection speaks

    @property
    def capabilities(self) -> acp.ClientCapabilities | None:
        """What the client advertised in `initialize` (None before it, or when it sent
        none the schema could read)."""
        caps: acp.ClientCapabilities | None = self.connection.peer_capabilities
        return caps

    @property
    def unstable(self) -> bool:
        """Whether the connection speaks ACP's unstable methods."""
        return self.connection.unstable

    @property
    def protocol_version(self) -> int | None:
        """The ACP protocol version of the connection (None before `initialize`)."""
        return self.connection.protocol_version

    async def session_update(self, session_id: str, update: acp.SessionUpdate) -> None:
        """Send one `session/update` notification."""
        await self.connection.notify(
            "session/update", acp.SessionNotification(session_id=session_id, update=update)
        )

    async def session_update_encoded(self, session_id: str, update: bytes) -> None:
        """Send one `session/update` whose update is already JSON (as a session store keeps
        it): the same notification as `session_update`, without encoding it again."""
        body = b'{"sessionId":' + _encode(session_id) + b',"update":' + update + b"}"
        await self.connection.notify("session/update", msgspec.Raw(body))

    async def elicitation_create(
        self, params: acp.CreateElicitationRequest, *, timeout: float | None = None
    ) -> acp.CreateElicitationResponse:
        """`elicitation/create` request; also checks that the client advertised the mode
        asked for (`elicitation.form` or `elicitation.url`)."""
        mode = params.mode
        if isinstance(mode, str) and not capability_allows(
            self.capabilities, ("elicitation", mode)
        ):
            raise CapabilityError(f"the client did not advertise `elicitation.{mode}`")
        return await super().elicitation_create(params, timeout=timeout)

    async def ext_method(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Call a `_`-prefixed extension method; the result is plain JSON."""
        if not method.startswith("_"):
            raise ValueError("extension methods must start with '_'")
        return await self.connection.request(method, params, timeout=timeout)

    async def ext_notification(self, method: str, params: Any) -> None:
        """Send a `_`-prefixed extension notification (`params`: anything msgspec encodes)."""
        if not method.startswith("_"):
            raise ValueError("extension notifications must start with '_'")
        await self.connection.notify(method, params)


class Agent(AgentHandlers):
    """Base class for ACP agents: override the handlers you support (`AgentHandlers` has a
    typed stub for every method an agent handles, stable and unstable).

    Handlers receive the typed params and return the typed result. A handler you do not
    override answers -32601 (Method not found), as the protocol asks for optional methods.
    `self.client` is the handle to the connected client (set before `initialize` runs).
    """

    client: ClientPeer
    # The ACP protocol versions this agent speaks. On a version 2 connection the runtime
    # calls the `v2_`-named handlers (`v2_initialize`, `v2_session_prompt`, ...) with
    # `acpstack.schema.v2` types; `SessionAgent` speaks both.
    protocol_versions: tuple[int, ...] = (1,)

    def on_connect(self, client: ClientPeer) -> None:
        """Called once the connection exists, before any message is handled."""
        self.client = client

    async def on_disconnect(self) -> None:
        """Called after the connection closed: free per-connection resources here."""

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Called when a message from the client had to be discarded unseen (too large, not
        JSON, or a notification with invalid params). It is already logged as a warning."""

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        """`initialize`: the default answers this library's protocol version and no optional
        capability. Override to advertise what the agent supports."""
        return acp.InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=acp.AgentCapabilities()
        )

    async def ext_method(self, method: str, params: Any) -> Any:
        """A `_`-prefixed extension request from the client (`params` as plain JSON); the
        result is sent as plain JSON. Default: -32601 (Method not found)."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: Any) -> None:
        """A `_`-prefixed extension notification from the client. Default: ignored."""
        log.debug("ignored extension notification %.100s", method)
