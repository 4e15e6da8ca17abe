"""Ctrl-D in the chat's terminal while it is in cooked mode, over a real pty: with the
terminal's end-of-file character on, the kernel keeps an end-of-file mark that a reader
switching to raw mode without flushing (as prompt_toolkit does) reads as a NUL byte, and
the chat never saw its Ctrl-D; `EndOfFileKey` keeps it the 0x04 byte."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterator

import pytest

from acpstack.cli._eof_key import EndOfFileKey

termios = pytest.importorskip("termios")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals only")


def _read(fd: int, size: int = 64) -> bytes:
    ready, _, _ = select.select([fd], [], [], 30)
    assert ready, "nothing to read within 30 s"
    return os.read(fd, size)


def _raw_without_flush(fd: int) -> None:
    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
    attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, int]]:
    """A real pseudo-terminal: (master, slave) file descriptors, closed afterwards."""
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def test_ctrl_d_typed_in_cooked_mode_reaches_a_raw_reader_as_ctrl_d(
    pty_pair: tuple[int, int],
) -> None:
    master, slave = pty_pair
    veof = termios.tcgetattr(slave)[6][termios.VEOF]
    with EndOfFileKey(slave):
        os.write(master, b"\x04")
        # The echo ("^D", the terminal's own) says the line discipline took the key in
        # cooked mode, before the switch below.
        assert _read(master) == b"^D"
        _raw_without_flush(slave)
        assert _read(slave) == b"\x04"
    assert termios.tcgetattr(slave)[6][termios.VEOF] == veof  # put back at the end


def test_a_program_run_in_the_terminal_gets_its_end_of_file_character(
    pty_pair: tuple[int, int],
) -> None:
    _, slave = pty_pair
    veof = termios.tcgetattr(slave)[6][termios.VEOF]
    with EndOfFileKey(slave) as keyboard:
        assert termios.tcgetattr(slave)[6][termios.VEOF] != veof
        with keyboard.restored():
            assert termios.tcgetattr(slave)[6][termios.VEOF] == veof
        assert termios.tcgetattr(slave)[6][termios.VEOF] != veof


def test_not_a_terminal_changes_nothing() -> None:
    read, write = os.pipe()
    try:
        with EndOfFileKey(read) as keyboard, keyboard.restored():
            pass
    finally:
        os.close(read)
        os.close(write)
