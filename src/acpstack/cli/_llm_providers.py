"""The reference agent's model settings as ACP providers (`providers/list|set|disable`,
unstable), the `ProviderSettings` a `SessionAgent` takes.

One provider, `main`: the OpenAI-compatible server the LLM brain talks to (API type
`openai`, the only one it speaks). `providers/set` replaces its whole configuration: the
base URL and the headers sent with every request. The agent's own key (from its
environment) is not part of that configuration, so it is never sent to a URL a client
chose. Nothing secret is echoed: `providers/list` shows the base URL without credentials,
header values never leave the agent, and every credential that arrives this way joins
the redaction of error messages and logs. `providers/disable` turns the model off: turns
then end with a message that says how to turn it on again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from acpstack.cli._redact import Redactor, is_secret_name, redact_url, url_secrets

if TYPE_CHECKING:
    from acpstack.cli._llm import LlmBrain
    from acpstack.schema import v1_unstable as acpu

PROVIDER_ID = "main"
API_TYPE = "openai"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token


class LlmProviders:
    """`ProviderSettings` over one `LlmBrain`; `redactors` learn the secrets it is given."""

    def __init__(self, brain: LlmBrain, redactors: tuple[Redactor, ...] = ()) -> None:
        self.brain = brain
        self.redactors = (brain.redactor, *redactors)

    def list_providers(self) -> list[acpu.ProviderInfo]:
        from acpstack.schema import v1_unstable as acpu

        current = (
            acpu.ProviderCurrentConfig(api_type=API_TYPE, base_url=redact_url(self.brain.base_url))
            if self.brain.enabled
            else None
        )
        return [
            acpu.ProviderInfo(
                provider_id=PROVIDER_ID, supported=[API_TYPE], required=False, current=current
            )
        ]

    def set_provider(
        self, provider_id: str, api_type: str, base_url: str, headers: dict[str, str]
    ) -> None:
        from acpstack.cli._refagent import ConfigError, check_base_url

        self._check(provider_id)
        if api_type != API_TYPE:
            raise ValueError(
                f"Unsupported API type {api_type!r}: this agent speaks {API_TYPE!r} "
                "(OpenAI-compatible chat completions)"
            )
        secrets = [*url_secrets(base_url)]
        secrets += [value for name, value in headers.items() if is_secret_name(name)]
        for redactor in self.redactors:  # before anything can show them
            redactor.add(*secrets)
        try:
            check_base_url(base_url)
        except ConfigError as exc:
            raise ValueError(str(exc).replace("--base-url", "baseUrl")) from None
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name) or any(c in value for c in "\r\n\0"):
                raise ValueError(f"Invalid HTTP header {name[:100]!r} (or its value)")
        self.brain.route(base_url, headers)

    def disable_provider(self, provider_id: str) -> None:
        self._check(provider_id)
        self.brain.enabled = False

    def _check(self, provider_id: str) -> None:
        if provider_id != PROVIDER_ID:
            raise ValueError(f"Unknown provider {provider_id!r}: this agent has {PROVIDER_ID!r}")
