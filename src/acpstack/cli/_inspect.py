"""`acpstack inspect` and `acpstack replay` (placeholder while being written)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parsers(sub: Any) -> None:
    sub.add_parser("inspect")
    sub.add_parser("replay")


def run_inspect(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    return 2


def run_replay(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    return 2
