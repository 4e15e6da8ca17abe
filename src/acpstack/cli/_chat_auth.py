"""Authentication in the chat: choosing a method when the agent requires one (`--auth`, or
a key at the terminal), and the agent's auth state (unstable `auth/status`, asked once at
start when the agent offers it, and `auth/status_update` as it changes), shown once per
change: a line for people, a record with `--format json`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from acpstack.cli._commands_base import agent_offers
from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat

STATE_STYLES = {"authenticated": "green", "unauthenticated": "yellow"}


async def choose_auth(chat: Chat, methods: list[acp.AuthMethod]) -> str | None:
    names = ", ".join(f"{m.id} ({m.name})" for m in methods)
    if chat.opts.auth_method is not None:
        if any(m.id == chat.opts.auth_method for m in methods):
            return chat.opts.auth_method
        raise CliError(f"--auth {chat.opts.auth_method}: the agent offers {names}", EXIT_USAGE)
    if chat.input is None or chat.renderer is None:
        chat.err.print(f"the agent requires authentication; give --auth METHOD, one of: {names}")
        return None
    lines = [Text("The agent asks you to authenticate:", style="bold")]
    for index, method in enumerate(methods[:9], 1):
        about = f": {method.description}" if isinstance(method.description, str) else ""
        lines.append(Text(f"  [{index}] {method.name}{about}"))
    chat.renderer.view.print(*lines)
    choices = [(str(i), m.id) for i, m in enumerate(methods[:9], 1)]
    return await chat.input.read_choice("choose a method (Esc skips): ", choices, none="skipped")


async def ask_auth_status(chat: Chat) -> None:
    """`auth/status` once, when the agent offers it; a failure is a line, not the end."""
    if not agent_offers(chat, "auth/status"):
        return
    try:
        await chat.runtime.auth_status()  # shown through `AuthStatusShown`
    except (RequestError, CapabilityError) as exc:
        chat.say(Text(f"the agent's auth status is unknown: {exc}", style="yellow"))


class AuthStatusShown:
    """Shows the agent's auth state when it changes (`ClientRuntime.on_auth_status`)."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self._last: tuple[str, list[Any]] | None = None

    def __call__(self, status: Any) -> None:
        state = str(status.state)
        accounts = _accounts(status)
        if self._last == (state, accounts):
            return
        self._last = (state, accounts)
        chat = self.chat
        if chat.headless and chat.opts.output == "json":
            chat.write_record({"type": "auth_status", "state": state, "accounts": accounts})
            return
        line = Text(f"auth: {state.replace('_', ' ')}", style=STATE_STYLES.get(state, "dim"))
        labels = [a["label"] + (" (active)" if a.get("active") else "") for a in accounts]
        if labels:
            line.append(f" · {', '.join(labels)}", style="dim")
        chat.show(lambda: chat.say(line))


def _accounts(status: Any) -> list[Any]:
    """The accounts as plain JSON (label, active, name, email, organization)."""
    import msgspec

    accounts = status.accounts if isinstance(status.accounts, list) else []
    return [msgspec.to_builtins(account) for account in accounts]
