"""Ctrl-D as a key in `acpstack chat`, whatever mode the terminal is in at the moment.

Kept apart from `_input.py` so that using it does not import prompt_toolkit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

try:
    import termios
except ImportError:  # not a POSIX system: no terminal settings to change
    termios = None  # type: ignore[assignment]


class EndOfFileKey:
    """While the chat reads the keyboard, the terminal on `fd` has no end-of-file
    character, so that Ctrl-D is always the 0x04 byte the prompt reads as Ctrl-D.

    Typed while the terminal is in cooked mode (between a choice closing and the prompt
    coming back), Ctrl-D was the terminal's end-of-file mark, and prompt_toolkit, which
    switches to raw mode without flushing pending input, read that mark as a NUL byte:
    the Ctrl-D was lost. The terminal's own settings come back when the chat ends, and
    while a program runs in the terminal (`restored`). Not a terminal: nothing changes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None  # the terminal's settings, while changed

    def __enter__(self) -> EndOfFileKey:
        if termios is None:
            return self
        try:
            saved = termios.tcgetattr(self.fd)
            disabled = os.fpathconf(self.fd, "PC_VDISABLE")
            changed = [*saved[:6], list(saved[6])]
            changed[6][termios.VEOF] = bytes([disabled])
            termios.tcsetattr(self.fd, termios.TCSANOW, changed)
        except (termios.error, OSError, ValueError):  # not a terminal
            return self
        self._saved = saved
        return self

    def __exit__(self, *exc_info: object) -> None:
        saved, self._saved = self._saved, None
        if saved is not None and termios is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    @contextlib.contextmanager
    def restored(self) -> Iterator[None]:
        """The terminal's own settings for a while (a login program running in it)."""
        if self._saved is None:
            yield
            return
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()


__all__ = ["EndOfFileKey"]
