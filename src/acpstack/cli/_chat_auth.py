"""Choosing how to authenticate when the agent requires it: `--auth METHOD`, else one key
at the terminal, else (headless, nobody to ask) a line saying which `--auth` to give."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from acpstack.cli._errors import EXIT_USAGE, CliError
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat


async def choose_auth(chat: Chat, methods: list[acp.AuthMethod]) -> str | None:
    """The id of the method to use, or None to go on without one."""
    names = ", ".join(f"{m.id} ({m.name})" for m in methods)
    chosen = chat.opts.auth_method
    if chosen is not None:
        if any(m.id == chosen for m in methods):
            return chosen
        raise CliError(f"--auth {chosen}: the agent offers {names}", EXIT_USAGE)
    if chat.input is None or chat.renderer is None:
        chat.err.print(f"the agent requires authentication; give --auth METHOD, one of: {names}")
        return None
    lines = [Text("The agent asks you to authenticate:", style="bold")]
    for index, method in enumerate(methods[:9], 1):
        about = f": {method.description}" if isinstance(method.description, str) else ""
        lines.append(Text(f"  [{index}] {method.name}{about}"))
    chat.renderer.view.print(*lines)
    choices = [(str(i), m.id) for i, m in enumerate(methods[:9], 1)]
    return await chat.input.read_choice("choose a method (Esc skips): ", choices)
