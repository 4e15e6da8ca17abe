"""Errors the `acpstack` command reports as one line (never a traceback), and its exit codes."""

from __future__ import annotations

#: Exit codes of `acpstack chat` (and the other commands), compatible with acpx.
EXIT_OK = 0
EXIT_ERROR = 1  # the agent failed, stopped, or could not be started; a session in use
EXIT_USAGE = 2  # the command line is wrong (unknown option, bad value, unknown agent name)
EXIT_TIMEOUT = 3  # --timeout passed
EXIT_NO_SESSION = 4  # no such session
EXIT_DENIED = 5  # the agent asked for permission, and every request was denied or cancelled
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT); SIGTERM and SIGHUP give 128 + the signal number
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`| head`): as a tool ended by SIGPIPE

#: Optional dependencies by top-level module, and the extra that installs them.
EXTRAS = {
    "rich": "cli",
    "prompt_toolkit": "cli",
    "platformdirs": "cli",
    "httpx": "llm",
    "mcp": "mcp",
    "uvicorn": "remote",
    "websockets": "remote",
    "h11": "remote",
    "httptools": "remote",
}


class CliError(Exception):
    """A problem to report as one line: what went wrong and, where we know it, the fix."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def missing_extra(exc: ModuleNotFoundError) -> CliError | None:
    """The one-line fix for a missing optional dependency, or None when it is not one."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return CliError(
        f"this command needs the `{extra}` extra ({top} is not installed): {install_hint(extra)}"
    )


def install_hint(extra: str) -> str:
    """How to install `extra`, as the README's Install section says: acpstack is not on
    PyPI, so from the checkout first, then from a wheel."""
    from acpstack.cli._args import version

    wheel = f"acpstack-{version()}-py3-none-any.whl"
    return (
        f"in the acpstack checkout, pip install '.[{extra}]' "
        f"(from a wheel: pip install '{wheel}[{extra}]')"
    )
