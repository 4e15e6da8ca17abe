"""`Agent`: what an agent author implements, and `ClientPeer`: the handle to the client."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import (
    CapabilityError,
    DroppedMessage,
    IncomingNotification,
    IncomingRequest,
    RequestError,
    capability_allows,
)

if TYPE_CHECKING:
    from acpstack.rpc import Connection

log = logging.getLogger("acpstack.agent")
_encode = msgspec.json.Encoder().encode


class ClientPeer:
    """Typed calls from the agent to the client.

    Every call checks what the client advertised in `initialize` first and raises
    `CapabilityError` instead of sending something the client did not allow.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @property
    def capabilities(self) -> acp.ClientCapabilities | None:
        caps: acp.ClientCapabilities | None = self.connection.peer_capabilities
        return caps

    @property
    def unstable(self) -> bool:
        """Whether the connection speaks ACP's unstable methods."""
        return self.connection.unstable

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

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest, *, timeout: float | None = None
    ) -> acp.RequestPermissionResponse:
        result: acp.RequestPermissionResponse = await self.connection.request(
            "session/request_permission", params, timeout=timeout
        )
        return result

    async def fs_read_text_file(
        self, params: acp.ReadTextFileRequest, *, timeout: float | None = None
    ) -> acp.ReadTextFileResponse:
        result: acp.ReadTextFileResponse = await self.connection.request(
            "fs/read_text_file", params, timeout=timeout
        )
        return result

    async def fs_write_text_file(
        self, params: acp.WriteTextFileRequest, *, timeout: float | None = None
    ) -> acp.WriteTextFileResponse:
        result: acp.WriteTextFileResponse = await self.connection.request(
            "fs/write_text_file", params, timeout=timeout
        )
        return result

    async def terminal_create(
        self, params: acp.CreateTerminalRequest, *, timeout: float | None = None
    ) -> acp.CreateTerminalResponse:
        result: acp.CreateTerminalResponse = await self.connection.request(
            "terminal/create", params, timeout=timeout
        )
        return result

    async def terminal_output(
        self, params: acp.TerminalOutputRequest, *, timeout: float | None = None
    ) -> acp.TerminalOutputResponse:
        result: acp.TerminalOutputResponse = await self.connection.request(
            "terminal/output", params, timeout=timeout
        )
        return result

    async def terminal_wait_for_exit(
        self, params: acp.WaitForTerminalExitRequest, *, timeout: float | None = None
    ) -> acp.WaitForTerminalExitResponse:
        result: acp.WaitForTerminalExitResponse = await self.connection.request(
            "terminal/wait_for_exit", params, timeout=timeout
        )
        return result

    async def terminal_kill(
        self, params: acp.KillTerminalRequest, *, timeout: float | None = None
    ) -> acp.KillTerminalResponse:
        result: acp.KillTerminalResponse = await self.connection.request(
            "terminal/kill", params, timeout=timeout
        )
        return result

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest, *, timeout: float | None = None
    ) -> acp.ReleaseTerminalResponse:
        result: acp.ReleaseTerminalResponse = await self.connection.request(
            "terminal/release", params, timeout=timeout
        )
        return result

    async def elicitation_create(
        self, params: acp.CreateElicitationRequest, *, timeout: float | None = None
    ) -> acp.CreateElicitationResponse:
        mode = params.mode
        if isinstance(mode, str) and not capability_allows(
            self.capabilities, ("elicitation", mode)
        ):
            raise CapabilityError(f"the client did not advertise `elicitation.{mode}`")
        result: acp.CreateElicitationResponse = await self.connection.request(
            "elicitation/create", params, timeout=timeout
        )
        return result

    async def elicitation_complete(self, params: acp.CompleteElicitationNotification) -> None:
        await self.connection.notify("elicitation/complete", params)

    async def ext_method(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Call a `_`-prefixed extension method; the result is plain JSON."""
        if not method.startswith("_"):
            raise ValueError("extension methods must start with '_'")
        return await self.connection.request(method, params, timeout=timeout)

    async def ext_notification(self, method: str, params: Any) -> None:
        if not method.startswith("_"):
            raise ValueError("extension notifications must start with '_'")
        await self.connection.notify(method, params)


class Agent:
    """Base class for ACP agents: override the handlers you support.

    Handlers receive the typed params and return the typed result. A handler you do not
    override answers -32601 (Method not found), as the protocol asks for optional methods.
    `self.client` is the handle to the connected client (set before `initialize` runs).
    """

    client: ClientPeer

    def on_connect(self, client: ClientPeer) -> None:
        """Called once the connection exists, before any message is handled."""
        self.client = client

    async def on_disconnect(self) -> None:
        """Called after the connection closed: free per-connection resources here."""

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Called when a message from the client had to be discarded unseen (too large, not
        JSON, or a notification with invalid params). It is already logged as a warning."""

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=acp.AgentCapabilities()
        )

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        raise RequestError.method_not_found("authenticate")

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        raise RequestError.method_not_found("logout")

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        raise RequestError.method_not_found("session/new")

    async def session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        raise RequestError.method_not_found("session/load")

    async def session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        raise RequestError.method_not_found("session/list")

    async def session_delete(self, params: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        raise RequestError.method_not_found("session/delete")

    async def session_resume(self, params: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def session_close(self, params: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        raise RequestError.method_not_found("session/close")

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        raise RequestError.method_not_found("session/set_mode")

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        raise RequestError.method_not_found("session/set_config_option")

    async def session_prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        raise RequestError.method_not_found("session/prompt")

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        """`session/cancel` notification: stop the running turn of that session."""

    async def ext_method(self, method: str, params: Any) -> Any:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: Any) -> None:
        log.debug("ignored extension notification %s", method)


class AgentDispatcher:
    """Routes inbound messages to an `Agent`'s handlers by the method table's names."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.connection: Connection | None = None

    async def handle_request(self, event: IncomingRequest) -> Any:
        if event.spec is None:
            return await self.agent.ext_method(event.method, event.params)
        handler = getattr(self.agent, event.spec.handler, None)
        if handler is None:
            raise RequestError.method_not_found(event.method)
        return await handler(event.params)

    async def handle_notification(self, event: IncomingNotification) -> None:
        if event.spec is None:
            await self.agent.ext_notification(event.method, event.params)
            return
        handler = getattr(self.agent, event.spec.handler, None)
        if handler is not None:
            await handler(event.params)

    def message_dropped(self, event: DroppedMessage) -> None:
        self.agent.on_message_dropped(event)
