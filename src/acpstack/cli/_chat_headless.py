"""One headless turn (`acpstack chat -p PROMPT`, or the prompt on stdin) and its exit code.

Output by `--format`: `text` shows the turn (the agent's text as it streams, each tool call
once when it is done, diffs, plans); `quiet` prints only the agent's final message;
`json` prints every wire message and a result record (see `Chat.result_record`).
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from acpstack.cli._errors import EXIT_DENIED, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.cli._chat import Chat

MENTION = re.compile(r"(?<!\S)@(\S+)")


def prompt_blocks(text: str, cwd: str) -> list[acp.ContentBlock]:
    """The prompt as content blocks: its text, and a `resource_link` for each `@path` that
    names a file (relative to `cwd`), so the agent can read it."""
    blocks: list[acp.ContentBlock] = [acp.TextContent(text=text)]
    seen: set[str] = set()
    for match in MENTION.finditer(text):
        name = match.group(1).rstrip(".,;:!?)")
        path = Path(cwd, name).resolve() if not os.path.isabs(name) else Path(name)
        if str(path) in seen or not path.is_file():
            continue
        seen.add(str(path))
        uri = "file://" + quote(str(path))
        blocks.append(acp.ResourceLink(name=name, uri=uri))
    return blocks


async def run_turn(chat: Chat, text: str) -> acp.PromptResponse:
    """Send one prompt and wait for its end; records the turn (also when it fails)."""
    assert chat.session_id is not None
    state = chat.session().state
    since = (len(state.messages), set(state.tool_calls))
    if chat.renderer is not None:
        chat.renderer.begin_turn()
    if chat.children is not None:
        chat.children.begin_turn()
    blocks = prompt_blocks(text, os.path.abspath(chat.opts.cwd))
    chat.interrupts = 0
    chat.turn = asyncio.ensure_future(chat.runtime.prompt(chat.session_id, blocks))
    outcome: dict[str, Any] = {"stopReason": None}
    try:
        result = await chat.turn
        outcome["stopReason"] = chat.stop_reason = result.stop_reason
        return result
    except BaseException as exc:
        outcome["error"] = str(exc) or type(exc).__name__
        raise
    finally:
        chat.turn = None
        if chat.children is not None:
            chat.children.end_turn()
        if chat.renderer is not None:
            chat.renderer.end_turn(chat.session_id)
        if chat.opts.book is not None:
            chat.opts.book.turn(text, state, since, outcome)


async def single_turn(chat: Chat) -> int:
    assert chat.opts.prompt is not None
    first = len(chat.session().state.messages)
    result = await run_turn(chat, chat.opts.prompt)
    if chat.opts.output == "quiet":
        final = [m for m in chat.session().state.messages[first:] if m.speaker == "agent"]
        text = final[-1].text if final else ""
        chat.out.write(text + ("" if text.endswith("\n") else "\n"))
        chat.out.flush()
    return exit_code(chat, result.stop_reason)


def exit_code(chat: Chat, stop_reason: str) -> int:
    if stop_reason == "cancelled":
        chat.fail("the turn was cancelled")
        return EXIT_INTERRUPTED
    if stop_reason != "end_turn":
        chat.fail(f"the turn ended with stopReason {stop_reason!r}")
        return EXIT_ERROR
    if chat.policy.counts.all_denied:
        counts = chat.policy.counts
        chat.err.print(
            f"every permission request was denied or cancelled ({counts.denied} of {counts.requested})"
        )
        return EXIT_DENIED
    return EXIT_OK
