"""What `SessionAgent`'s unstable methods need besides the class (its handlers are in
`_runtime.py`): the provider settings an author supplies and the capabilities advertised.

`session/set_title`, `session/archive` / `unarchive`, `session/status`, `auth/status` (and
the `auth/status_update` it sends when the state changes), `providers/*` (through a
`ProviderSettings` the author supplies), `systemPrompt` on session setup, and `mcp/message`
notifications for the MCP servers a client offers over ACP. They are routed only on
connections opened with `unstable=True`; the capabilities are advertised there only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.schema import v1_unstable as acpu

T = TypeVar("T")
log = logging.getLogger("acpstack.agent")

SYSTEM_PROMPT = "system_prompt"  # key in SessionRecord.meta: {"mode": ..., "text": ...}


class ProviderSettings(Protocol):
    """Where an agent keeps its LLM provider settings, for `providers/list|set|disable`.

    Raise `ValueError` for an unknown provider or a setting that cannot be applied (the
    client gets -32602 with its message)."""

    def list_providers(self) -> list[acpu.ProviderInfo]:
        """The providers the agent knows, with their current settings (`providers/list`)."""
        ...

    def set_provider(
        self, provider_id: str, api_type: str, base_url: str, headers: dict[str, str]
    ) -> None:
        """Use `provider_id` with this API type, base URL and headers (`providers/set`)."""
        ...

    def disable_provider(self, provider_id: str) -> None:
        """Stop using `provider_id` (`providers/disable`)."""
        ...


def unstable_capabilities(
    result: acp.InitializeResponse,
    *,
    fork: bool,
    archive: bool,
    auth_status: bool,
    providers: bool,
    system_prompt_modes: tuple[str, ...],
    mcp_acp: bool,
) -> Any:
    """The same `initialize` answer in the unstable types, advertising the unstable
    methods this agent supports."""
    import msgspec

    from acpstack.schema import v1_unstable as acpu

    unstable = msgspec.json.decode(msgspec.json.encode(result), type=acpu.InitializeResponse)
    caps = unstable.agent_capabilities
    assert isinstance(caps, acpu.AgentCapabilities)
    assert isinstance(caps.session_capabilities, acpu.SessionCapabilities)
    session_caps = caps.session_capabilities
    session_caps.status = acpu.SessionStatusCapabilities()
    session_caps.title = acpu.SessionTitleCapabilities()
    if fork:
        session_caps.fork = acpu.SessionForkCapabilities()
    if archive:
        session_caps.archive = acpu.SessionArchiveCapabilities()
    extra = [m for m in system_prompt_modes if m != "append"]
    session_caps.system_prompt = acpu.SessionSystemPromptCapabilities()
    if "override" in extra:
        session_caps.system_prompt.mode = acpu.SessionSystemPromptModeCapabilities(
            override=acpu.SessionSystemPromptOverrideCapabilities()
        )
    if auth_status:
        auth = caps.auth if isinstance(caps.auth, acpu.AgentAuthCapabilities) else None
        caps.auth = auth or acpu.AgentAuthCapabilities()
        caps.auth.status = acpu.AuthStatusCapabilities()
    if providers:
        caps.providers = acpu.ProvidersCapabilities()
    if mcp_acp and isinstance(caps.mcp_capabilities, acpu.McpCapabilities):
        caps.mcp_capabilities.acp = True
    return unstable
