"""Authentication in the chat: choosing a method when the agent requires one (`--auth`, or
a key at the terminal), running a terminal login (the agent's program with the method's
arguments and environment, in the user's terminal), and the agent's auth state (unstable
`auth/status`, asked once at start when the agent offers it, and `auth/status_update` as it
changes), shown once per change: a line for people, a record with `--format json`.

A terminal login runs the agent's command with its default arguments (a registry entry's
or a profile's `args`) replaced by the method's `args`, as the ACP registry's
AUTHENTICATION.md says; a command line given after `--` has no separable defaults, so the
method's `args` are appended to it (the schema's wording). The method's `env`, when given,
replaces the agent's configured variables. The chat then asks for the session again.
All of this works on protocol v1 and v2 alike (the runtime gives v2's methods in v1's
shape). An agent that requires a login but offers no method the chat can use ends the
chat with a message naming what it offered (`no_usable_login`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any

from msgspec import UNSET
from rich.text import Text

from acpstack.cli._commands_base import agent_offers
from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.cli._redact import Redactor
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
        if isinstance(method, acp.AuthMethodTerminal):
            command, _ = login_command(chat, method)
            shown = Redactor().text(shlex.join(command))
            lines.append(Text(f"      runs in this terminal: {shown}", style="dim"))
    chat.renderer.view.print(*lines)
    choices = [(str(i), m.id) for i, m in enumerate(methods[:9], 1)]
    return await chat.input.read_choice("choose a method (Esc skips): ", choices, none="skipped")


def login_command(chat: Chat, method: acp.AuthMethodTerminal) -> tuple[list[str], dict[str, str]]:
    """The command line of `method`'s terminal login, and the variables set on top of ours."""
    launch = chat.opts.launch
    command = list(launch.command if launch is not None else chat.opts.agent_command)
    defaults = launch.default_args if launch is not None else 0
    args = method.args if isinstance(method.args, list) else []
    env = method.env if isinstance(method.env, dict) else chat.opts.agent_env or {}
    return [*command[: len(command) - defaults], *args], dict(env)


async def run_terminal_login(chat: Chat, method: acp.AuthMethodTerminal) -> bool:
    """Run `method`'s login in the user's terminal; True when it exited with 0."""
    command, env = login_command(chat, method)
    shown = Redactor().text(shlex.join(command))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        chat.say(
            Text(
                f"the login {method.name!r} needs a terminal: run `{shown}` in one, "
                "then start the chat again",
                style="red",
            )
        )
        return False
    chat.say(Text(f"logging in with `{shown}` (the chat goes on when it exits)", style="cyan"))
    # the terminal as the login expects it (Ctrl-D its end of file again)
    with chat.keyboard.restored() if chat.keyboard else contextlib.nullcontext():
        proc = await asyncio.create_subprocess_exec(  # stdin, stdout, stderr: this terminal
            *command, env={**os.environ, **env}, cwd=chat.opts.cwd
        )
        try:
            code = await proc.wait()
        finally:
            if proc.returncode is None:  # the chat was stopped meanwhile
                proc.terminate()
                await proc.wait()
    if code != 0:
        chat.say(Text(f"the login ended with exit code {code}", style="red"))
        return False
    chat.say(Text("logged in; asking for the session again", style="green"))
    return True


def no_usable_login(chat: Chat) -> CliError | None:
    """When the agent requires authentication and offers no method this chat can use (none
    at all, only types it does not know, or terminal methods on a chat that did not start
    the agent): the error that says so, naming what the agent offered. None when some
    method was usable (the user skipped it, or it did not log in)."""
    runtime = chat.runtime
    model = runtime.initialize_result
    methods = model.auth_methods if model is not None else UNSET
    usable: tuple[type, ...] = (acp.AuthMethodAgent, acp.AuthMethodTerminal)
    if runtime.run_terminal_login is None:
        usable = (acp.AuthMethodAgent,)
    if isinstance(methods, list) and any(isinstance(m, usable) for m in methods):
        return None
    raw = runtime.agent.initialize_result
    offered = raw.auth_methods if raw is not None else UNSET
    if not isinstance(offered, list) or not offered:
        return CliError("the agent requires authentication but offers no method to log in with")
    names = ", ".join(_describe(m) for m in offered)
    why = "log in with the agent's own tools, then start the chat again"
    if runtime.run_terminal_login is None and any(
        isinstance(m, acp.AuthMethodTerminal) for m in methods or []
    ):
        why = "a terminal login needs a chat that starts the agent itself (not --url)"
    return CliError(
        f"the agent requires authentication, and this chat can use none of its methods: "
        f"{names}; {why}"
    )


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


def _describe(method: Any) -> str:
    """An auth method as the agent sent it (v1's or v2's struct, or the JSON of a type we do
    not know) in a few words: its id, name and type (v1's untagged methods are agent's)."""
    import msgspec

    plain = msgspec.to_builtins(method) if isinstance(method, msgspec.Struct) else method
    if not isinstance(plain, dict):
        return repr(plain)
    ident = plain.get("methodId", plain.get("id", "?"))
    name = plain.get("name")
    kind = plain.get("type", "agent")
    return f"{ident} ({name}; type {kind})" if isinstance(name, str) else f"{ident} (type {kind})"


def _accounts(status: Any) -> list[Any]:
    """The accounts as plain JSON (label, active, name, email, organization)."""
    import msgspec

    accounts = status.accounts if isinstance(status.accounts, list) else []
    return [msgspec.to_builtins(account) for account in accounts]
