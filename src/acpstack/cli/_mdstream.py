"""Streamed Markdown cut into finished blocks, so each block is rendered once.

Chunks arrive in any size. A block ends at a blank line outside a code fence, or with the
line that closes its fence; a fence that opens right after a paragraph ends the paragraph.
Every line is looked at once, so the work is linear in the message, however long.

A block that grows past what one screen can show is not held back: `take_partial`
hands out its complete lines (and, for one huge line, its leading part) as plain text,
and the rest of that block stays plain, since its Markdown context is already printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class Block:
    text: str
    markdown: bool  # False: print as plain text (a block split because it was too long)


class BlockSplitter:
    def __init__(self) -> None:
        self._lines: list[str] = []  # complete lines of the current block
        self._partial = ""  # the line being received
        self._fence: str | None = None  # the open fence's marker
        self._plain = False  # the current block was already partly printed as plain text

    def feed(self, text: str) -> list[Block]:
        """Take a chunk; returns the blocks it finished."""
        done: list[Block] = []
        data = self._partial + text
        lines = data.split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line, done)
        return done

    @property
    def tail(self) -> str:
        """What is not finished yet: the current block's lines and the partial line."""
        return "\n".join([*self._lines, self._partial]) if self._lines else self._partial

    @property
    def tail_lines(self) -> int:
        return len(self._lines) + 1

    def finish(self) -> list[Block]:
        """The end of the message: everything left, as blocks."""
        done: list[Block] = []
        if self._partial:
            self._line(self._partial, done)
            self._partial = ""
        self._emit(done)
        self._fence = None
        return done

    def take_partial(self, max_chars: int) -> str:
        """The current block's complete lines (and the partial line's first `max_chars`
        characters when it is longer than that), removed and to be printed as plain text."""
        taken = "\n".join(self._lines)
        self._lines = []
        if len(self._partial) > max_chars > 0:
            cut = len(self._partial) - len(self._partial) % max_chars
            if cut == len(self._partial):
                cut -= max_chars
            head, self._partial = self._partial[:cut], self._partial[cut:]
            taken = f"{taken}\n{head}" if taken else head
        if taken:
            self._plain = True
        return taken

    def _line(self, line: str, done: list[Block]) -> None:
        if self._fence is not None:
            self._lines.append(line)
            if _closes(line, self._fence):
                self._fence = None
                self._emit(done)
            return
        opening = FENCE.match(line)
        if opening:
            self._emit(done)
            self._fence = opening.group(1)
            self._lines.append(line)
        elif not line.strip():
            self._emit(done)
        else:
            self._lines.append(line)

    def _emit(self, done: list[Block]) -> None:
        if self._lines:
            done.append(Block("\n".join(self._lines), markdown=not self._plain))
        self._lines = []
        self._plain = False


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
        and len(line) - len(line.lstrip(" ")) <= 3
    )
