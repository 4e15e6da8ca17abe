"""`Client`: what a client author implements, and `AgentPeer`: the handle to the agent."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, overload

from acpstack.client._generated_peer import AgentPeerMethods, ClientHandlers
from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import DroppedMessage, RequestError

if TYPE_CHECKING:
    from acpstack.rpc import Connection
    from acpstack.schema import v2

log = logging.getLogger("acpstack.client")


class ProtocolVersionError(RuntimeError):
    """The agent answered `initialize` with a protocol version we do not speak."""


class AgentPeer(AgentPeerMethods):
    """Typed calls from the client to the agent (one per method: `AgentPeerMethods`).

    Calls check what the agent advertised in `initialize` and raise `CapabilityError`
    instead of sending a method the agent did not allow.
    """

    def __init__(self, connection: Connection, extensions: tuple[str, ...] = ()) -> None:
        self.connection = connection
        self.extensions = extensions  # the frozen extensions the connection speaks
        # The agent's answer to `initialize` as it came (a v2 answer on a v2 connection).
        self.initialize_result: acp.InitializeResponse | v2.InitializeResponse | None = None
        # On a v2 connection: the answer in the v1 shape (see `client/_v2_results.py`).
        self.model_initialize_result: acp.InitializeResponse | None = None

    @property
    def capabilities(self) -> acp.AgentCapabilities | None:
        """What the agent advertised, in the v1 shape whatever the connection speaks (on v2:
        what this client can do with it; the v2 object is `connection.peer_capabilities`)."""
        if self.model_initialize_result is not None:
            model = self.model_initialize_result.agent_capabilities
            return model if isinstance(model, acp.AgentCapabilities) else None
        caps: acp.AgentCapabilities | None = self.connection.peer_capabilities
        return caps

    @property
    def protocol_version(self) -> int | None:
        """The ACP protocol version of the connection (None before `initialize`)."""
        return self.connection.protocol_version

    @overload
    async def initialize(
        self, params: acp.InitializeRequest | None = None, *, timeout: float | None = None
    ) -> acp.InitializeResponse: ...

    @overload
    async def initialize(
        self, params: v2.InitializeRequest, *, timeout: float | None = None
    ) -> acp.InitializeResponse | v2.InitializeResponse: ...

    async def initialize(
        self,
        params: acp.InitializeRequest | v2.InitializeRequest | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """`initialize`: v1 params ask for version 1, v2 params (`acpstack.schema.v2`) for
        version 2, which a v1 agent answers with 1: the connection then goes on in v1 and
        the answer is v1's. ProtocolVersionError for an answer we cannot go on in."""
        if params is None:
            params = acp.InitializeRequest(
                protocol_version=PROTOCOL_VERSION, client_capabilities=acp.ClientCapabilities()
            )
        result = await self.connection.request("initialize", params, timeout=timeout)
        if result.protocol_version != self.connection.protocol_version:
            raise ProtocolVersionError(
                f"the agent speaks ACP protocol version {result.protocol_version}; this "
                f"client asked for {params.protocol_version} and speaks "
                f"{', '.join(map(str, self.connection.protocol_versions))}"
            )
        self.initialize_result = result
        self.model_initialize_result = None
        if not isinstance(result, acp.InitializeResponse):  # v2's, on a v2 connection
            from acpstack.client._v2_results import initialize_result

            self.model_initialize_result = initialize_result(result)
        return result

    async def call(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Any request by name: `_`-prefixed extension methods (the result is plain JSON)."""
        return await self.connection.request(method, params, timeout=timeout)

    async def notify(self, method: str, params: Any) -> None:
        """Any notification by name (`_`-prefixed extension notifications; `params`: anything
        msgspec encodes)."""
        await self.connection.notify(method, params)


class Client(ClientHandlers):
    """Base class for ACP clients: override the handlers you support (`ClientHandlers` has a
    typed stub for every method a client handles, stable and unstable).

    A handler you do not override answers -32601 (Method not found). The default
    permission handler never approves: it answers -32601, which agents treat as a refusal.
    `acpstack.client.ClientRuntime` is a complete client with real fs, terminals and
    permission policies built on this class.
    """

    agent: AgentPeer
    incoming_params: ClassVar[Mapping[str, type]] = {}
    """Methods whose params this client takes in another type than the schema's (the
    type must read the params' JSON): `ClientRuntime` takes `session/update` as
    `acpstack.events.SessionNotification`, its update read straight into an event."""

    def on_connect(self, agent: AgentPeer) -> None:
        """Called once the connection exists, before any message is handled (sets
        `self.agent`; call it when overriding)."""
        self.agent = agent

    async def on_disconnect(self) -> None:
        """Called after the connection closed."""

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Called when a message from the agent had to be discarded unseen (too large, not
        JSON, or a notification such as a `session/update` with invalid params): an update
        may be missing. It is already logged as a warning."""

    async def ext_method(self, method: str, params: Any) -> Any:
        """A `_`-prefixed extension request from the agent (`params` as plain JSON); the
        result is sent as plain JSON. Default: -32601 (Method not found)."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: Any) -> None:
        """A `_`-prefixed extension notification from the agent. Default: ignored."""
        log.debug("ignored extension notification %s", method)
