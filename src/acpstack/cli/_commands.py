"""The chat's own slash commands: one table, one function each.

A command the agent advertises under the same name wins (it is the agent's to answer,
e.g. its `/help`); the built-in one stays reachable with a double slash (`//help`).
A failing command is reported and the chat goes on.

Adding a command: write `async def _name(chat, args)` and add a `SlashCommand` to `COMMANDS`
(with `method=` when it needs an ACP method the agent may not offer: it is then listed only
when the agent offers it). The session-management commands are in `_commands_manage.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec
from rich.text import Text

from acpstack.cli import _commands_manage as manage
from acpstack.cli._commands_base import CommandError, SlashCommand
from acpstack.cli._commands_base import say as _say
from acpstack.cli._listing import Listing
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat

__all__ = ["COMMANDS", "CommandError", "builtin_for", "command_names", "set_config", "set_mode"]


# -- modes and config options --------------------------------------------------------------


async def set_mode(chat: Chat, mode_id: str) -> None:
    state = chat.session().state
    known = [mode.id for mode in state.available_modes]
    if known and mode_id not in known:
        raise ValueError(f"unknown mode {mode_id!r}; the session's modes: {', '.join(known)}")
    assert chat.session_id is not None
    await chat.runtime.agent.session_set_mode(
        acp.SetSessionModeRequest(session_id=chat.session_id, mode_id=mode_id)
    )
    state.current_mode_id = mode_id


def _choices(option: acp.SessionConfigOption) -> list[str]:
    values: list[str] = []
    options: Any = getattr(option, "options", None)
    for item in options if isinstance(options, list) else []:
        if isinstance(item, acp.SessionConfigSelectGroup):
            values += [choice.value for choice in item.options]
        elif isinstance(item, acp.SessionConfigSelectOption):
            values.append(item.value)
    return values


async def set_config(chat: Chat, key: str, value: str) -> None:
    state = chat.session().state
    option = next((o for o in state.config_options if o.id == key), None)
    if option is None:
        known = ", ".join(o.id for o in state.config_options) or "none"
        raise ValueError(f"unknown config option {key!r}; the session's options: {known}")
    params = acp.SetSessionConfigOptionRequest(
        session_id=chat.session_id or "", config_id=key, value=value
    )
    if option.type == "boolean":
        if value.lower() not in ("true", "false"):
            raise ValueError(f"{key} is true or false, not {value!r}")
        params.value = value.lower() == "true"
        params.type = "boolean"
    else:
        allowed = _choices(option)
        if allowed and value not in allowed:
            raise ValueError(f"{key} is one of {', '.join(allowed)}, not {value!r}")
    result = await chat.runtime.agent.session_set_config_option(params)
    state.config_options = list(result.config_options)


async def _mode(chat: Chat, args: list[str]) -> None:
    if args:
        try:
            await set_mode(chat, args[0])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return
    state = chat.session().state
    if not state.available_modes:
        _say(chat, "this session has no modes")
        return
    for mode in state.available_modes:
        mark = "*" if mode.id == state.current_mode_id else " "
        about = f"  {mode.description}" if isinstance(mode.description, str) else ""
        _say(
            chat,
            Text(f" {mark} {mode.id}", style="bold" if mark == "*" else "")
            + Text(about, style="dim"),
        )


async def _config(chat: Chat, args: list[str]) -> None:
    if len(args) == 1 or len(args) > 2:
        raise CommandError("usage: /config [ID VALUE]")
    if args:
        try:
            await set_config(chat, args[0], args[1])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    options = chat.session().state.config_options
    if not options:
        _say(chat, "this session has no config options")
    for option in options:
        value = msgspec.to_builtins(option.current_value)
        if isinstance(value, bool):  # as it is typed: true | false
            value = "true" if value else "false"
        allowed = _choices(option)
        hint = (
            f"  ({' | '.join(allowed)})"
            if allowed
            else "  (true | false)"
            if option.type == "boolean"
            else ""
        )
        _say(
            chat,
            Text(f"  {option.id} = {value}", style="bold")
            + Text(f"  {option.name}{hint}", style="dim"),
        )


async def _new(chat: Chat, args: list[str]) -> None:
    await chat.new_session(switched=True)
    _say(chat, Text(f"new session {chat.session_id}", style="dim"))


async def _usage(chat: Chat, args: list[str]) -> None:
    usage = chat.session().state.usage
    if usage is None:
        _say(chat, "the agent has not reported usage")
        return
    _say(chat, f"context: {usage.used} of {usage.size} tokens")


async def _help(chat: Chat, args: list[str]) -> None:
    agent = {c.name: c for c in chat.session().state.available_commands}
    listing = Listing()
    built_in = listing.section("Built-in commands")
    for command in COMMANDS.values():
        if not command.offered(chat):
            continue
        slashes = "//" if command.name in agent else "/"
        usage = f"{slashes}{command.name} {command.usage_for(chat)}".rstrip()
        built_in.append((usage, command.help_for(chat)))
    if agent:
        agents = listing.section("The agent's commands")
        for cmd in agent.values():
            hint = cmd.input.hint if isinstance(cmd.input, acp.UnstructuredCommandInput) else ""
            agents.append((f"/{cmd.name} {hint}".rstrip(), cmd.description))
    keys = Text(
        "Alt-Enter or Esc-Enter: newline · Tab: complete /commands and @files · Ctrl-C: clear "
        "the line, or cancel the turn (twice quits) · Ctrl-D: quit · //NAME: the built-in "
        "command when the agent has one of that name",
        style="dim",
    )
    assert chat.renderer is not None
    chat.renderer.view.print(listing, keys)


async def _quit(chat: Chat, args: list[str]) -> None:
    chat.quit.set()


COMMANDS: dict[str, SlashCommand] = {
    command.name: command
    for command in [
        SlashCommand("help", "", "this text", _help),
        SlashCommand("mode", "[ID]", "show the session's modes, or switch", _mode),
        SlashCommand("config", "[ID VALUE]", "show the config options, or set one", _config),
        SlashCommand(
            "sessions",
            "",
            "the agent's sessions for this directory",
            manage.sessions,
            options={"--all": ("session/archive", "archived ones too")},
        ),
        SlashCommand("load", "ID", "continue another session (its history is shown)", manage.load),
        SlashCommand("new", "", "start a new session", _new),
        SlashCommand(
            "title", "TEXT", "rename the session", manage.title, method="session/set_title"
        ),
        SlashCommand(
            "archive",
            "[ID]",
            "archive this session (a new one starts) or session ID",
            manage.archive,
            method="session/archive",
        ),
        SlashCommand(
            "unarchive",
            "[ID]",
            "bring an archived session back",
            manage.unarchive,
            method="session/unarchive",
        ),
        SlashCommand(
            "status",
            "[ID]",
            "whether the agent has the session open or saved",
            manage.status,
            method="session/status",
        ),
        SlashCommand("usage", "", "the context the session uses", _usage),
        SlashCommand("quit", "", "leave (or Ctrl-D)", _quit),
    ]
}


def command_names(chat: Chat) -> Iterable[tuple[str, str]]:
    """Completions: the agent's commands, then the built-ins it does not shadow."""
    agent: list[Any] = []
    if chat.session_id is not None and chat.session_id in chat.runtime.sessions:
        agent = chat.runtime.sessions[chat.session_id].state.available_commands
    names = {c.name for c in agent}
    for cmd in agent:
        yield f"/{cmd.name}", cmd.description
    for command in COMMANDS.values():
        if not command.offered(chat):
            continue
        yield (f"//{command.name}" if command.name in names else f"/{command.name}"), command.help


def builtin_for(chat: Chat, line: str) -> tuple[SlashCommand, list[str]] | None:
    """The built-in command `line` calls, or None (a prompt for the agent, or its command)."""
    if not line.startswith("/"):
        return None
    word, *args = line.split()
    forced = word.startswith("//")
    command = COMMANDS.get(word.lstrip("/"))
    if command is None:
        return None
    if not forced:
        agent = {c.name for c in chat.session().state.available_commands}
        if command.name in agent:
            return None
    return command, args
