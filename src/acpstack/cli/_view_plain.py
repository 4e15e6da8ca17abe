"""The session as plain text, for a pipe or a file (`--format text` when stdout is not a
terminal): the agent's text as it streams, and everything else printed once, when it is
final (a tool call when it completes or fails, a plan when it changes). No colour, no
cursor movement."""

from __future__ import annotations

import io
from typing import IO

from rich.console import Console, RenderableType
from rich.text import Text

#: The width tables and other laid-out renderables get on a pipe.
PIPE_WIDTH = 100


def _plain(renderable: RenderableType) -> str:
    if isinstance(renderable, Text):
        return renderable.plain
    if isinstance(renderable, str):
        return renderable
    out = io.StringIO()
    Console(file=out, width=PIPE_WIDTH, color_system=None, force_terminal=False).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


class PlainView:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._at_line_start = True
        self._streaming: str | None = None  # "message" or "thought"

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._at_line_start = text.endswith("\n")
            self.out.flush()

    def message(self, text: str) -> None:
        self._stream("message", "", text)

    def thought(self, text: str) -> None:
        self._stream("thought", "[thinking] ", text)

    def _stream(self, kind: str, prefix: str, text: str) -> None:
        if self._streaming != kind:
            self.end_message()
            self._streaming = kind
            self._write(prefix)
        self._write(text)

    def end_message(self) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._streaming = None

    def tool_live(self, tool_call_id: str, lines: list[Text]) -> None:
        pass  # a pipe gets a tool call once, when it is done

    def tool_done(self, tool_call_id: str, renderables: list[RenderableType]) -> None:
        self.print(*renderables)

    def tool_gone(self, tool_call_id: str) -> None:
        pass

    def print(self, *renderables: RenderableType) -> None:
        self.end_message()
        for renderable in renderables:
            self._write(_plain(renderable).rstrip("\n") + "\n")

    def pause(self) -> None:
        self.end_message()

    def resume(self) -> None:
        pass

    def wipe_echo(self) -> None:
        pass  # plain text may stop mid-line: nothing is wiped

    def close(self) -> None:
        self.end_message()
