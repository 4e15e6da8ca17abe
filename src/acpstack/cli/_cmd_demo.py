"""`acpstack demo`: the chat and the built-in agent at work on a copy of a sample project."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="watch the client and the built-in agent work on a sample project",
        description="Copies a sample project to a temporary folder and lets the built-in "
        "(offline) agent work on it through `acpstack chat`. The demo's config, state and "
        "session store stay in that folder too (your own are neither read nor written), and "
        "a model set for `acpstack agent` (ACPSTACK_MODEL) is not used.",
    )
    demo.add_argument(
        "--yes", action="store_true", help="approve the demo's permission requests without asking"
    )
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from acpstack.cli._demo import run_demo

    return run_demo(assume_yes=args.yes)
