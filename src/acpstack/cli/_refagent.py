"""`acpstack agent`: the reference agent over stdio, with a scripted or an LLM brain.

Configuration that can be checked without a network call is checked before serving; a
problem is one line on stderr and exit code 2:

- `--model` needs the `llm` extra (httpx).
- `--base-url` must be an http(s) URL with a host.
- An API key is required when the base URL is api.openai.com or any https URL whose host is
  not a loopback address, unless the URL carries credentials itself (user info, or a query
  parameter such as `api_key`). The key is read from the variable named by
  `--api-key-env` (default OPENAI_API_KEY); an empty variable counts as missing.
- The session store must open (an SQLite file, or a `postgresql://` URL).

With `--model`, the variable holding the key is then removed from the agent's environment,
so the commands it runs itself do not inherit it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from acpstack.agent import (
    Session,
    SessionAgent,
    SessionStore,
    Turn,
    default_store_path,
    open_store,
    serve_stdio,
)
from acpstack.cli._brain import Brain
from acpstack.cli._errors import install_hint
from acpstack.cli._mcp_tools import mcp_installed, not_connected, unconnected_servers
from acpstack.cli._redact import (
    Redactor,
    install_log_redaction,
    redact_headers,
    redact_url,
    url_secrets,
)
from acpstack.cli._scripted import COMMANDS, ScriptedBrain
from acpstack.schema import v1 as acp

log = logging.getLogger("acpstack.cli")
TOLD_UNCONNECTED = "told_mcp_unconnected"  # session.state: the user heard about it


class ConfigError(Exception):
    """A configuration problem found at startup: its message is the one line the user sees."""


class ReferenceAgent(SessionAgent):
    name = "acpstack-agent"
    title = "acpstack reference agent"

    def __init__(self, brain: Brain, *, images: bool = False, **kwargs: Any) -> None:
        mcp = mcp_installed()  # without the `mcp` extra: no MCP, and none advertised
        super().__init__(
            modes=[("code", "Code"), ("ask", "Ask")],
            mcp=mcp,
            mcp_http=mcp,
            mcp_sse=mcp,
            prompt_capabilities=acp.PromptCapabilities(image=images, embedded_context=True),
            **kwargs,
        )
        self.brain = brain

    async def on_session_start(self, session: Session) -> None:
        commands = [
            acp.AvailableCommand(
                name=name,
                description=description,
                input=acp.UnstructuredCommandInput(hint=hint) if hint else None,
            )
            for name, description, hint in COMMANDS
        ]
        await session.send(acp.AvailableCommandsUpdate(available_commands=commands))
        unconnected = unconnected_servers(session)
        if unconnected:
            log.warning("session %s: %s", session.session_id, not_connected(unconnected))

    async def prompt(self, turn: Turn) -> acp.StopReason:
        unconnected = unconnected_servers(turn.session)
        if unconnected and not turn.session.state.get(TOLD_UNCONNECTED):
            turn.session.state[TOLD_UNCONNECTED] = True  # once per session
            await turn.notice(
                "MCP servers not connected", not_connected(unconnected), severity="warning"
            )
        if turn.session.title is None and turn.text.strip() and not turn.text.startswith("/"):
            await self.set_title(turn.session, turn.text.strip()[:60])
        return await self.brain.respond(turn)

    def stored_mcp_server(self, server: Any) -> Any:
        """The session record keeps MCP servers without their secrets (they are not needed
        to reopen a session: the client passes its servers again)."""
        plain = super().stored_mcp_server(server)
        if not isinstance(plain, dict):
            return plain
        if isinstance(plain.get("url"), str):
            plain["url"] = redact_url(plain["url"])
        for key in ("headers", "env"):
            items = plain.get(key)
            if isinstance(items, list):
                masked = redact_headers(
                    {str(i.get("name")): str(i.get("value")) for i in items if isinstance(i, dict)}
                )
                plain[key] = [{"name": name, "value": value} for name, value in masked.items()]
        return plain


# -- startup checks -------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def needs_api_key(base_url: str) -> bool:
    """The rule for a missing key (see the module docstring)."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if url_secrets(base_url):
        return False
    return host == "api.openai.com" or (parts.scheme == "https" and not _is_loopback(host))


def check_base_url(base_url: str) -> None:
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ConfigError(f"--base-url is not a valid URL: {redact_url(base_url)!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--base-url must be an http:// or https:// URL with a host name, got {redact_url(base_url)!r}"
        )


def build_brain(
    *, model: str | None, base_url: str | None, api_key_env: str, context_window: int, images: bool
) -> Brain:
    if not model:
        return ScriptedBrain(images=images)
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise ConfigError(
            f'--model needs the "llm" extra (httpx), which is not installed: {install_hint("llm")}'
        ) from None
    from acpstack.cli._llm import DEFAULT_BASE_URL, LlmBrain

    url = base_url or DEFAULT_BASE_URL
    check_base_url(url)
    key = os.environ.get(api_key_env) or None
    if key is None and needs_api_key(url):
        raise ConfigError(
            f"no API key for {redact_url(url)}: set the {api_key_env} environment variable "
            "(or name another one with --api-key-env)"
        )
    return LlmBrain(
        model=model,
        base_url=url,
        api_key=key,
        api_key_env=api_key_env,
        context_window=context_window,
        images=images,
    )


def withhold_key(api_key_env: str) -> None:
    """Remove the variable holding the model's key from this process's environment, once
    the brain has the key: the commands the agent runs itself (for a client without
    terminals) inherit the environment, and what they print is shown to the client, stored
    and sent to the model. (Their output is also masked: see `Redactor.values`.)"""
    os.environ.pop(api_key_env, None)


def open_session_store(location: str | None) -> SessionStore:
    """The store at `location`, else $ACPSTACK_STORE, else the default SQLite file: an
    SQLite path or a `postgresql://` URL. A problem is a ConfigError without credentials,
    naming the store that failed and how to choose another."""
    from_env = not location and bool(os.environ.get("ACPSTACK_STORE"))
    where = location or os.environ.get("ACPSTACK_STORE") or None
    try:
        return open_store(where)
    except Exception as exc:  # sqlite3, psycopg, OS errors and a missing extra alike
        if where:
            shown = redact_url(where) + (" (from ACPSTACK_STORE)" if from_env else "")
        else:
            shown = f"{default_store_path()} (the default, in the user data directory)"
        message = " ".join(Redactor(url_secrets(where or "")).text(str(exc)).split())  # one line
        raise ConfigError(
            f"cannot open the session store {shown}: {message}; choose another with --store "
            "PATH or the ACPSTACK_STORE environment variable (an SQLite file, a postgresql:// "
            "URL, or :memory: to keep sessions only while the agent runs)"
        ) from None


def run_reference_agent(
    *,
    model: str | None,
    base_url: str | None,
    api_key_env: str,
    store_path: str | None,
    context_window: int,
    images: bool,
    unstable: bool = False,
) -> int:
    key = os.environ.get(api_key_env) if model else None
    redactor = Redactor([key, *url_secrets(base_url or "")])
    try:
        brain = build_brain(
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            context_window=context_window,
            images=images,
        )
        store = open_session_store(store_path)
    except ConfigError as exc:
        sys.stderr.write(f"acpstack agent: {redactor.text(str(exc))}\n")
        return 2
    if model:
        withhold_key(api_key_env)
    install_log_redaction(redactor)
    providers = None
    if unstable and not isinstance(brain, ScriptedBrain):
        from acpstack.cli._llm import LlmBrain
        from acpstack.cli._llm_providers import LlmProviders

        assert isinstance(brain, LlmBrain)
        providers = LlmProviders(brain, (redactor,))  # one connection, so one client sets it
    try:
        agent = ReferenceAgent(brain, store=store, images=images, providers=providers)
        serve_stdio(agent, unstable=unstable)
    except Exception:  # a crash's traceback goes through the redacting log, not sys.excepthook
        log.exception("the agent stopped on an unexpected error")
        return 1
    finally:
        store.close()
    return 0
