"""`Client`: what a client author implements, and `AgentPeer`: the handle to the agent."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acpstack.schema import PROTOCOL_VERSION
from acpstack.schema import v1 as acp
from acpstack.wire import DroppedMessage, IncomingNotification, IncomingRequest, RequestError

if TYPE_CHECKING:
    from acpstack.rpc import Connection

log = logging.getLogger("acpstack.client")


class ProtocolVersionError(RuntimeError):
    """The agent answered `initialize` with a protocol version we do not speak."""


class AgentPeer:
    """Typed calls from the client to the agent.

    Calls check what the agent advertised in `initialize` and raise `CapabilityError`
    instead of sending a method the agent did not allow.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.initialize_result: acp.InitializeResponse | None = None

    @property
    def capabilities(self) -> acp.AgentCapabilities | None:
        caps: acp.AgentCapabilities | None = self.connection.peer_capabilities
        return caps

    async def initialize(
        self, params: acp.InitializeRequest | None = None, *, timeout: float | None = None
    ) -> acp.InitializeResponse:
        if params is None:
            params = acp.InitializeRequest(
                protocol_version=PROTOCOL_VERSION, client_capabilities=acp.ClientCapabilities()
            )
        result: acp.InitializeResponse = await self.connection.request(
            "initialize", params, timeout=timeout
        )
        if result.protocol_version != PROTOCOL_VERSION:
            raise ProtocolVersionError(
                f"the agent speaks ACP protocol version {result.protocol_version}; this client speaks {PROTOCOL_VERSION}"
            )
        self.initialize_result = result
        return result

    async def authenticate(
        self, params: acp.AuthenticateRequest, *, timeout: float | None = None
    ) -> acp.AuthenticateResponse:
        result: acp.AuthenticateResponse = await self.connection.request(
            "authenticate", params, timeout=timeout
        )
        return result

    async def logout(
        self, params: acp.LogoutRequest | None = None, *, timeout: float | None = None
    ) -> acp.LogoutResponse:
        result: acp.LogoutResponse = await self.connection.request(
            "logout", params or acp.LogoutRequest(), timeout=timeout
        )
        return result

    async def session_new(
        self, params: acp.NewSessionRequest, *, timeout: float | None = None
    ) -> acp.NewSessionResponse:
        result: acp.NewSessionResponse = await self.connection.request(
            "session/new", params, timeout=timeout
        )
        return result

    async def session_load(
        self, params: acp.LoadSessionRequest, *, timeout: float | None = None
    ) -> acp.LoadSessionResponse:
        result: acp.LoadSessionResponse = await self.connection.request(
            "session/load", params, timeout=timeout
        )
        return result

    async def session_list(
        self, params: acp.ListSessionsRequest | None = None, *, timeout: float | None = None
    ) -> acp.ListSessionsResponse:
        result: acp.ListSessionsResponse = await self.connection.request(
            "session/list", params or acp.ListSessionsRequest(), timeout=timeout
        )
        return result

    async def session_delete(
        self, params: acp.DeleteSessionRequest, *, timeout: float | None = None
    ) -> acp.DeleteSessionResponse:
        result: acp.DeleteSessionResponse = await self.connection.request(
            "session/delete", params, timeout=timeout
        )
        return result

    async def session_resume(
        self, params: acp.ResumeSessionRequest, *, timeout: float | None = None
    ) -> acp.ResumeSessionResponse:
        result: acp.ResumeSessionResponse = await self.connection.request(
            "session/resume", params, timeout=timeout
        )
        return result

    async def session_close(
        self, params: acp.CloseSessionRequest, *, timeout: float | None = None
    ) -> acp.CloseSessionResponse:
        result: acp.CloseSessionResponse = await self.connection.request(
            "session/close", params, timeout=timeout
        )
        return result

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest, *, timeout: float | None = None
    ) -> acp.SetSessionModeResponse:
        result: acp.SetSessionModeResponse = await self.connection.request(
            "session/set_mode", params, timeout=timeout
        )
        return result

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest, *, timeout: float | None = None
    ) -> acp.SetSessionConfigOptionResponse:
        result: acp.SetSessionConfigOptionResponse = await self.connection.request(
            "session/set_config_option", params, timeout=timeout
        )
        return result

    async def session_prompt(
        self, params: acp.PromptRequest, *, timeout: float | None = None
    ) -> acp.PromptResponse:
        result: acp.PromptResponse = await self.connection.request(
            "session/prompt", params, timeout=timeout
        )
        return result

    async def session_cancel(self, params: acp.CancelNotification) -> None:
        await self.connection.notify("session/cancel", params)

    async def call(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Any request by name (unstable methods on an unstable connection, `_` extensions)."""
        return await self.connection.request(method, params, timeout=timeout)

    async def notify(self, method: str, params: Any) -> None:
        await self.connection.notify(method, params)


class Client:
    """Base class for ACP clients: override the handlers you support.

    A handler you do not override answers -32601 (Method not found). The default
    permission handler never approves: it answers -32601, which agents treat as a refusal.
    `acpstack.client.ClientRuntime` is a complete client with real fs, terminals and
    permission policies built on this class.
    """

    agent: AgentPeer

    def on_connect(self, agent: AgentPeer) -> None:
        self.agent = agent

    async def on_disconnect(self) -> None:
        """Called after the connection closed."""

    def on_message_dropped(self, dropped: DroppedMessage) -> None:
        """Called when a message from the agent had to be discarded unseen (too large, not
        JSON, or a notification such as a `session/update` with invalid params): an update
        may be missing. It is already logged as a warning."""

    async def session_update(self, params: acp.SessionNotification) -> None:
        """`session/update` notification: streamed agent output for a session."""

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        raise RequestError.method_not_found("session/request_permission")

    async def fs_read_text_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        raise RequestError.method_not_found("fs/read_text_file")

    async def fs_write_text_file(
        self, params: acp.WriteTextFileRequest
    ) -> acp.WriteTextFileResponse:
        raise RequestError.method_not_found("fs/write_text_file")

    async def terminal_create(
        self, params: acp.CreateTerminalRequest
    ) -> acp.CreateTerminalResponse:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(
        self, params: acp.TerminalOutputRequest
    ) -> acp.TerminalOutputResponse:
        raise RequestError.method_not_found("terminal/output")

    async def terminal_wait_for_exit(
        self, params: acp.WaitForTerminalExitRequest
    ) -> acp.WaitForTerminalExitResponse:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def terminal_kill(self, params: acp.KillTerminalRequest) -> acp.KillTerminalResponse:
        raise RequestError.method_not_found("terminal/kill")

    async def terminal_release(
        self, params: acp.ReleaseTerminalRequest
    ) -> acp.ReleaseTerminalResponse:
        raise RequestError.method_not_found("terminal/release")

    async def elicitation_create(
        self, params: acp.CreateElicitationRequest
    ) -> acp.CreateElicitationResponse:
        raise RequestError.method_not_found("elicitation/create")

    async def elicitation_complete(self, params: acp.CompleteElicitationNotification) -> None:
        """`elicitation/complete` notification (unknown ids are ignored)."""

    async def ext_method(self, method: str, params: Any) -> Any:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: Any) -> None:
        log.debug("ignored extension notification %s", method)


class ClientDispatcher:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def handle_request(self, event: IncomingRequest) -> Any:
        if event.spec is None:
            return await self.client.ext_method(event.method, event.params)
        handler = getattr(self.client, event.spec.handler, None)
        if handler is None:
            raise RequestError.method_not_found(event.method)
        return await handler(event.params)

    async def handle_notification(self, event: IncomingNotification) -> None:
        if event.spec is None:
            await self.client.ext_notification(event.method, event.params)
            return
        handler = getattr(self.client, event.spec.handler, None)
        if handler is not None:
            await handler(event.params)

    def message_dropped(self, event: DroppedMessage) -> None:
        self.client.on_message_dropped(event)
