"""The session on a terminal: Markdown printed once per finished block, and one small live
area at the bottom holding what is still changing (the paragraph being streamed, one line
per running tool call). Nothing is ever cropped: finished blocks are printed whole and
wrapped by rich at the terminal's width (a table's cells fold, see `_markdown.py`), and
the live area is kept shorter than the screen (a block too long for it is printed as plain
text as it comes).

Why not re-render the whole message: parsing it again on every chunk is quadratic in its
length, and a live area taller than the screen cannot be redrawn (that is what cropped).
The live area is drawn here (cursor up, erase below) on the event loop's thread, not by
rich's `Live`, whose refresh thread could draw between our prints and leave stale lines.
Everything shown while a turn runs goes through this view, so it knows where the area is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.segment import Segment
from rich.text import Text

from acpstack.cli._markdown import ChatMarkdown
from acpstack.cli._mdstream import Block, BlockSplitter

#: Running tool calls shown in the live area at most (the others are counted).
MAX_LIVE_TOOLS = 8
#: The live area is redrawn at most this often (seconds): chunks come faster than eyes read.
REDRAW_EVERY = 0.05


class _Lines:
    """Rendered lines, printed as they are (a block without its blank margins)."""

    def __init__(self, lines: list[list[Segment]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in self.lines:
            yield from line
            yield Segment.line()


def _trimmed(console: Console, renderable: RenderableType) -> _Lines:
    """`renderable` at the console's width, without the blank lines around it (rich adds
    them to lists, code and tables; the view puts exactly one between two blocks)."""
    lines = console.render_lines(renderable, console.options, pad=False)
    blank = [not "".join(seg.text for seg in line).strip() for line in lines]
    first = blank.index(False) if False in blank else len(lines)
    last = len(blank) - blank[::-1].index(False) if False in blank else first
    return _Lines(lines[first:last])


class _Stream:
    """One stream of text (the agent's message, or its thoughts) being printed."""

    def __init__(self, style: str, markdown: bool, prefix: str = "") -> None:
        self.style = style
        self.markdown = markdown
        self.prefix = prefix
        self.splitter = BlockSplitter()
        self.active = False
        self.blocks = 0  # blocks printed of the current message (a blank line between two)

    def renderable(self, block: Block) -> RenderableType:
        if self.markdown and block.markdown:
            return ChatMarkdown(block.text)
        return Text(block.text, style=self.style)


class LiveView:
    def __init__(self, console: Console) -> None:
        self.console = console
        self._rows = 0  # rows the live area takes on screen (it ends at the cursor)
        self._row_cells: list[int] = []  # the cells of each of those rows, as drawn
        self._redraw_pending = False
        self._paused = False
        self._message = _Stream("", markdown=True)
        self._thought = _Stream("dim italic", markdown=False, prefix="thinking: ")
        self._tools: dict[str, list[Text]] = {}

    # -- streamed text ----------------------------------------------------------------

    def message(self, text: str) -> None:
        self._stream(self._message, self._thought, text)

    def thought(self, text: str) -> None:
        self._stream(self._thought, self._message, text)

    def _stream(self, stream: _Stream, other: _Stream, text: str) -> None:
        if other.active:
            self._finish(other)
        if not stream.active and stream.prefix:
            self.console.print(Text(stream.prefix, style=stream.style), end="")
            self.console.print()
        stream.active = True
        blocks = stream.splitter.feed(text)
        if blocks:
            self._erase()
        for block in blocks:
            self._print_block(stream, block)
        self._bound_tail(stream)
        self._refresh()

    def _bound_tail(self, stream: _Stream) -> None:
        """Print what the live area cannot hold: it stays a few rows short of the screen."""
        width = max(self.console.width, 10)
        # Half the free rows: words wrap, so a text takes more rows than its length says.
        room = max((self.console.height - 3 - min(len(self._tools), MAX_LIVE_TOOLS + 1)) // 2, 3)
        rows = sum(max(1, -(-cell_len(line) // width)) for line in stream.splitter.tail.split("\n"))
        if rows > room:
            taken = stream.splitter.take_partial(width * max(room // 2, 1))
            if taken:
                self._erase()
                self.console.print(Text(taken, style=stream.style))

    def end_message(self) -> None:
        for stream in (self._message, self._thought):
            if stream.active:
                self._finish(stream)
        self._refresh()

    def _finish(self, stream: _Stream) -> None:
        self._erase()
        for block in stream.splitter.finish():
            self._print_block(stream, block)
        stream.active = False
        stream.blocks = 0

    def _print_block(self, stream: _Stream, block: Block) -> None:
        if stream.blocks and block.markdown:
            self.console.print()
        stream.blocks += 1
        renderable = stream.renderable(block)
        self.console.print(_trimmed(self.console, renderable) if block.markdown else renderable)

    # -- tool calls and other output -----------------------------------------------------

    def tool_live(self, tool_call_id: str, lines: list[Text]) -> None:
        self._tools[tool_call_id] = lines
        self._refresh()

    def tool_done(self, tool_call_id: str, renderables: list[RenderableType]) -> None:
        self._tools.pop(tool_call_id, None)
        self.print(*renderables)

    def tool_gone(self, tool_call_id: str) -> None:
        """Take a live line off the area, printing nothing."""
        if self._tools.pop(tool_call_id, None) is not None:
            self._refresh()

    def print(self, *renderables: RenderableType) -> None:
        self.end_message()
        self._erase()
        for renderable in renderables:
            self.console.print(renderable)
        self._refresh()

    # -- the live area ----------------------------------------------------------------------

    def _area(self) -> RenderableType | None:
        parts: list[RenderableType] = []
        for stream in (self._message, self._thought):
            if stream.active and stream.splitter.tail:
                parts.append(Text(stream.splitter.tail, style=stream.style))
        tools = list(self._tools.values())
        for lines in tools[:MAX_LIVE_TOOLS]:
            parts.extend(lines)
        if len(tools) > MAX_LIVE_TOOLS:
            parts.append(Text(f"… {len(tools) - MAX_LIVE_TOOLS} more running", style="dim"))
        return Group(*parts) if parts else None

    def _refresh(self) -> None:
        """Redraw the live area soon (at most every REDRAW_EVERY seconds)."""
        if self._paused or self._redraw_pending:
            return
        self._redraw_pending = True
        try:
            asyncio.get_running_loop().call_later(REDRAW_EVERY, self._redraw)
        except RuntimeError:  # no event loop (a test, or the very end): draw now
            self._redraw()

    def _redraw(self) -> None:
        self._redraw_pending = False
        if self._paused:
            return
        self._erase()
        area = self._area()
        if area is None:
            return
        lines = self.console.render_lines(area, self.console.options, pad=False)
        lines = lines[-max(self.console.height - 1, 1) :]  # a cursor cannot go above the screen
        self.console.print(_Lines(lines))
        self._rows = len(lines)
        self._row_cells = [sum(cell_len(segment.text) for segment in line) for line in lines]

    def _erase(self) -> None:
        if self._rows:
            rows = self._rows_now()
            self.console.file.write(f"\x1b[{rows}F\x1b[J")  # up to its first row; clear below
            self.console.file.flush()
            self._rows = 0

    def _rows_now(self) -> int:
        """The rows the live area takes now: a terminal made narrower since it was drawn
        wraps its longer lines again (tmux, VTE, iTerm2, kitty do), and going up only by
        the rows drawn would leave the top of such a line on the screen."""
        width = max(self.console.width, 1)
        rewrapped = sum(max(1, -(-cells // width)) for cells in self._row_cells)
        return max(self._rows, min(rewrapped, max(self.console.height - 1, 1)))

    def wipe_echo(self) -> None:
        """Clear the row under the live area, where the terminal echoes a key typed while a
        turn runs (Ctrl-C shows "^C"), so what is printed next starts on a clean line."""
        if self.console.is_terminal:
            self.console.file.write("\r\x1b[K")
            self.console.file.flush()

    def pause(self) -> None:
        """Take the live area off the screen (before the user is asked something)."""
        self.end_message()
        self._paused = True
        self._erase()

    def resume(self) -> None:
        self._paused = False
        self._refresh()

    def close(self) -> None:
        """The end of a turn: print what is left, take the live area down."""
        self.end_message()
        self._tools.clear()
        self._erase()
