"""Output streams of the `acpstack` command that survive a reader going away."""

from __future__ import annotations

from typing import IO, Any, cast


class QuietWhenGone:
    """A text stream that goes quiet once writing to it fails (the terminal hung up, the
    pipe was closed): the chat then still shuts down in order instead of failing at its
    next line of output."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self.gone = True

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding...: the stream's own
        return getattr(self._stream, name)


def quiet_when_gone(stream: IO[str]) -> IO[str]:
    return cast(IO[str], QuietWhenGone(stream))
