"""Argument helpers shared by the subcommands (argparse types, the `-- COMMAND` split)."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Iterable
from typing import Any


def version() -> str:
    from importlib import metadata  # only for --version: it is slow to import

    try:
        return metadata.version("acpstack")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        from acpstack._version import __version__

        return __version__


class VersionAction(argparse.Action):
    """`--version`: prints the installed package's version (read only when asked)."""

    def __init__(self, option_strings: list[str], dest: str = "version", **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        sys.stdout.write(f"acpstack {version()}\n")
        parser.exit()


def split_agent_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """Everything after the first `--` is the agent's command line (never parsed by us)."""
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :] or None
    return argv, None


AGENT_COMMAND = "[-- COMMAND [ARG ...]]"


def with_agent_command(parser: argparse.ArgumentParser, what: str) -> None:
    """Mark `parser` as taking `-- COMMAND [ARG ...]` and show that in its usage."""
    parser.formatter_class = AgentCommandFormatter
    parser.set_defaults(takes_agent_command=True)
    parser.epilog = (f"-- COMMAND [ARG ...]: {what}. " + (parser.epilog or "")).strip()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


class Formatter(argparse.HelpFormatter):
    """Descriptions and epilogs keep their paragraphs (parted by a blank line), each wrapped
    to the terminal's width like option help is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = re.split(r"\n\s*\n", text.strip())
        return "\n\n".join(
            textwrap.fill(
                " ".join(paragraph.split()),
                max(width, 20),
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,  # a URL or a path stays whole
                break_on_hyphens=False,  # and so does an --option
            )
            for paragraph in paragraphs
        )


class AgentCommandFormatter(Formatter):
    """The usage of a command that takes an agent command after `--` ends with
    `[-- COMMAND [ARG ...]]`, wrapped like the rest of the usage (argparse never sees what
    follows `--`: it is split off first)."""

    def _format_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[Any],
        prefix: str | None,
    ) -> str:
        lines = super()._format_usage(usage, actions, groups, prefix).rstrip("\n").split("\n")
        if len(lines[-1]) + 1 + len(AGENT_COMMAND) <= self._width:
            lines[-1] += " " + AGENT_COMMAND
        else:  # a row of its own, indented as argparse indents the arguments' rows
            if len(lines) > 1:
                indent = len(lines[1]) - len(lines[1].lstrip())
            else:
                indent = len(prefix or "usage: ") + len(self._prog) + 1
            indent = max(min(indent, self._width - len(AGENT_COMMAND)), 0)
            lines.append(" " * indent + AGENT_COMMAND)
        return "\n".join(lines) + "\n\n"
