"""What every slash command uses: its table entry, its error, printing, and whether the
agent offers the ACP method a command needs (from the method table's capability gates)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text

from acpstack.schema import method_table
from acpstack.wire import capability_allows

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat


class CommandError(Exception):
    """A command used the wrong way, or one the agent does not offer; the message says why."""


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str
    run: Callable[[Chat, list[str]], Awaitable[None]]
    method: str | None = None  # the ACP method it needs: shown only when the agent offers it
    # Options shown only when the agent offers what they need: option -> (method, help).
    options: dict[str, tuple[str, str]] = field(default_factory=dict)

    def offered(self, chat: Chat) -> bool:
        return self.method is None or agent_offers(chat, self.method)

    def _options(self, chat: Chat) -> list[tuple[str, str]]:
        offered = self.options.items()
        return [(o, about) for o, (method, about) in offered if agent_offers(chat, method)]

    def usage_for(self, chat: Chat) -> str:
        return " ".join([*(f"[{o}]" for o, _ in self._options(chat)), self.usage]).strip()

    def help_for(self, chat: Chat) -> str:
        return "; ".join([self.help, *(f"{o}: {about}" for o, about in self._options(chat))])


def say(chat: Chat, *lines: Text | str) -> None:
    assert chat.renderer is not None
    chat.renderer.view.print(*[Text(line) if isinstance(line, str) else line for line in lines])


def agent_offers(chat: Chat, method: str) -> bool:
    """Whether `method` can be sent to this agent: the connection speaks it (an unstable
    method needs `--unstable`) and the agent advertised the capability it needs."""
    connection = chat.runtime.agent.connection
    spec = next((s for s in method_table(connection.unstable) if s.name == method), None)
    return spec is not None and capability_allows(chat.runtime.agent.capabilities, spec.gate)


def require(chat: Chat, method: str, what: str) -> None:
    """CommandError unless the agent offers `method` (`what`: the feature, for the message)."""
    if agent_offers(chat, method):
        return
    if not chat.runtime.agent.connection.unstable and _unstable(method):
        raise CommandError(
            f"{what} ({method}) is an unstable ACP method: start the chat with --unstable "
            "(or `unstable = true` in the agent's profile)"
        )
    raise CommandError(f"the agent does not offer {what} ({method})")


def _unstable(method: str) -> bool:
    return any(spec.name == method and spec.unstable for spec in method_table(True))
