"""What `acpstack chat` reads from the keyboard, with prompt_toolkit.

- The prompt: a line editor with a history file (kept across runs; only prompts go in it),
  Alt-Enter or Esc-Enter for a newline, multi-line paste as one prompt (bracketed paste),
  Tab completion of built-in and agent commands and of `@file` paths. Ctrl-C clears the
  line; on an empty line it asks for a second Ctrl-C, which quits; Ctrl-D quits.
- Choices (permission options, auth methods): one key each, nothing to confirm; Ctrl-C or
  Esc answers "no choice".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from prompt_toolkit import PromptSession, print_formatted_text
from prompt_toolkit.application import Application
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, HSplit, Layout, Window

T = TypeVar("T")
#: At most this many entries of a folder are offered for `@path` completion.
MAX_PATH_COMPLETIONS = 200


class Interrupted(Exception):
    """Ctrl-C on an empty prompt line (a second one in a row quits), or during a choice."""


class ChatCompleter(Completer):
    """`/` commands at the start of the line, `@path` anywhere (relative to the session's cwd)."""

    def __init__(self, commands: Callable[[], Iterable[tuple[str, str]]], cwd: str) -> None:
        self.commands = commands
        self.cwd = cwd

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name, description in self.commands():
                if name.startswith(before):
                    yield Completion(name, -len(before), display_meta=description)
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._paths(word[1:])

    def _paths(self, typed: str) -> Iterable[Completion]:
        folder, _, prefix = typed.rpartition("/")
        base = Path(self.cwd, folder) if folder else Path(self.cwd)
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return
        shown = 0
        for entry in entries:
            if not entry.name.startswith(prefix) or (entry.name.startswith(".") and not prefix):
                continue
            suffix = "/" if entry.is_dir() else ""
            yield Completion(entry.name + suffix, -len(prefix), display=entry.name + suffix)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")  # Alt-Enter sends the same keys
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=Interrupted())

    return keys


class ChatInput:
    def __init__(self, history_file: Path | None, completer: Completer | None) -> None:
        history: History = FileHistory(str(history_file)) if history_file else InMemoryHistory()
        self.session: PromptSession[str] = PromptSession(
            history=history,
            completer=completer,
            complete_while_typing=False,
            key_bindings=_bindings(),
            prompt_continuation=lambda width, line, wrap: ". ".rjust(width),
            enable_suspend=True,
        )
        self.active = False

    async def read_line(self, prompt: str) -> str:
        """The next prompt. Raises EOFError (Ctrl-D) and Interrupted (Ctrl-C, empty line)."""
        self.active = True
        try:
            return await self.session.prompt_async(
                prompt, handle_sigint=False, set_exception_handler=False
            )
        finally:
            self.active = False

    async def read_choice(
        self,
        question: str,
        choices: Sequence[tuple[str, T]],
        shown: Callable[[T], str] = str,
        none: str = "(none)",
    ) -> T | None:
        """One key press picks one of `choices` ((key, value) pairs); None for Esc or Ctrl-D,
        shown after the question as `none` (what the caller makes of it). Raises Interrupted
        for Ctrl-C."""
        keys = KeyBindings()
        for key, value in choices:
            keys.add(key)(lambda event, value=value: event.app.exit(result=value))
        for key in ("escape", "c-d"):
            keys.add(key)(lambda event: event.app.exit(result=None))
        keys.add("c-c")(lambda event: event.app.exit(exception=Interrupted()))
        control = FormattedTextControl(FormattedText([("bold", question)]), show_cursor=True)
        app: Application[T | None] = Application(
            layout=Layout(HSplit([Window(control, wrap_lines=True, dont_extend_height=True)])),
            key_bindings=keys,
            full_screen=False,
            erase_when_done=True,
        )
        self.active = True
        try:
            chosen = await app.run_async(handle_sigint=False, set_exception_handler=False)
        finally:
            self.active = False
        answer = none if chosen is None else shown(chosen)
        print_formatted_text(FormattedText([("bold", question), ("", answer)]))
        return chosen
