"""Driving `acpstack chat` in a real terminal from tests.

- `Tmux`: a tmux server of its own (its socket in the test's folder) with one window of a
  given size: keys and pastes go in, the screen (and its scrollback) comes out as text, as
  a user would see it. tmux is a real terminal emulator: it wraps, answers cursor position
  requests, and supports bracketed paste.
- `PROMPT`: the chat's input prompt as prompt_toolkit draws it on a pexpect terminal.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

PROMPT = r"(?:\x1b\[[0-9;?]*[a-zA-Z])*>(?:\x08|\x1b\[[0-9;?]*[a-zA-Z]| )"
HAVE_TMUX = shutil.which("tmux") is not None
# The server's environment is what its windows start with: no COLUMNS or LINES (the test
# runner's, which would override the window's real size), a UTF-8 locale.
SERVER_ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")},
    "LANG": "C.UTF-8",
}


class Tmux:
    def __init__(self, folder: Path, width: int, height: int = 40) -> None:
        self.socket = str(folder / "tmux.sock")
        self.width, self.height = width, height
        self.exit_file = folder / "exit-code"

    def _tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=20,
            env=SERVER_ENV,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {done.stderr}")
        return done.stdout

    def start(self, command: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        """Run `command` in the window; its exit code goes to `exit_file`, and the window
        stays open (so its last screen can be read)."""
        # The shell stays for the exit code: a Ctrl-C meant for the chat must not end it too.
        script = f"trap : INT; {shlex.join(command)}; echo $? > {shlex.quote(str(self.exit_file))}; exec sleep 600"
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        self._tmux(
            "-f", "/dev/null", "new-session", "-d", "-s", "chat",
            "-x", str(self.width), "-y", str(self.height), "-c", str(cwd),
            *env_args, "sh", "-c", script,
        )  # fmt: skip
        self._tmux("set-option", "-t", "chat", "history-limit", "50000")

    def keys(self, *keys: str) -> None:
        """tmux key names (Enter, C-c, M-Enter, Up) or literal text."""
        self._tmux("send-keys", "-t", "chat", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "chat", "-l", text)

    def paste(self, text: str, folder: Path) -> None:
        """Paste `text` the way a terminal does (bracketed, when the program asked for it)."""
        path = folder / "paste.txt"
        path.write_text(text)
        self._tmux("load-buffer", str(path))
        self._tmux("paste-buffer", "-p", "-t", "chat")

    def screen(self) -> str:
        """What the window shows now and everything scrolled off it, a line the terminal
        wrapped joined again (as the program wrote it)."""
        text = self._tmux("capture-pane", "-t", "chat", "-p", "-J", "-S", "-50000")
        return "\n".join(line.rstrip() for line in text.splitlines())

    def rows(self) -> list[str]:
        """The same, one row of the window per line."""
        return self._tmux("capture-pane", "-t", "chat", "-p", "-S", "-50000").splitlines()

    def visible(self) -> str:
        return self._tmux("capture-pane", "-t", "chat", "-p")

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 20) -> str:
        """The screen once `what` is on it (a string) or `what(screen)` holds."""
        test = (lambda screen: what in screen) if isinstance(what, str) else what
        # The screen gives no event when it changes: look again, with a deadline.
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if test(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{what!r} not on the screen within {timeout} s:\n{screen}")
            time.sleep(0.05)

    def submit(self, line: str) -> str:
        """Type `line` and Enter at the chat's prompt; the screen once the line is there
        after a prompt and a new prompt follows it (the screen ending with ">"). Counting
        prompts alone is not enough: the chat redraws its prompt when something arrives
        while it waits, and on a slow machine that can come after the keys were sent."""
        echo = f"> {line}"
        before = len(_lines_starting(self.screen(), echo))
        self.type(line)
        self.keys("Enter")

        def answered(screen: str) -> bool:
            echoed = _lines_starting(screen, echo)
            if len(echoed) <= before or not screen.rstrip().endswith(">"):
                return False
            return prompt_count("\n".join(screen.splitlines()[echoed[-1] + 1 :])) > 0

        return self.wait_for(answered)

    def exit_code(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while not (self.exit_file.exists() and self.exit_file.read_text().strip()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the chat did not end within {timeout} s:\n{self.screen()}")
            time.sleep(0.05)
        return int(self.exit_file.read_text())

    def close(self) -> None:
        self._tmux("kill-server", check=False)


def _lines_starting(screen: str, text: str) -> list[int]:
    return [i for i, line in enumerate(screen.splitlines()) if line.startswith(text)]


def prompt_count(screen: str) -> int:
    """How many lines of the screen start with the chat's prompt, ">"."""
    return sum(1 for line in screen.splitlines() if line.startswith(">"))
