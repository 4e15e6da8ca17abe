"""`acpstack demo`: the chat client and the built-in agent on a copy of a sample project."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from acpstack.cli._chat import ChatOptions, default_agent_command, run_chat
from acpstack.cli._policy import LabelledRule
from acpstack.client import Rule

DEMO_TASK = "Add a line about running the tests with unittest to the notes"


#: Variables that would make the demo's agent something other than the scripted offline
#: one it announces (a model the user set up for `acpstack agent`).
NOT_FOR_THE_DEMO = ("ACPSTACK_MODEL", "OPENAI_BASE_URL")


def run_demo(*, assume_yes: bool = False) -> int:
    project = Path(tempfile.mkdtemp(prefix="acpstack-demo-")) / "calculator"
    shutil.copytree(Path(__file__).parent / "demo_project", project)
    _isolate(project.parent / "home")
    on_terminal = sys.stdin.isatty() and sys.stdout.isatty() and not assume_yes
    print(f"acpstack demo: a copy of a sample project is in {project}")
    print(f"The built-in agent (scripted, offline) gets the task: {DEMO_TASK!r}")
    if on_terminal:
        print("You answer its permission requests with a number key.\n")
    opts = ChatOptions(
        agent_command=default_agent_command(),
        cwd=str(project),
        prompt=DEMO_TASK,
        interactive=False,
        output="text",
        ask_user=on_terminal,
    )
    if not on_terminal:
        reason = (
            "--yes"
            if assume_yes
            else "demo: stdin is not a terminal, so the demo approves each request itself"
        )
        opts.rules = [LabelledRule(Rule(decision="allow"), reason)]
    code = run_chat(opts)
    if code >= 128:  # ended by a signal: the turn was cancelled and the agent stopped
        return code
    readme = (project / "README.md").read_text()
    print("\nREADME.md now ends with:\n  " + "\n  ".join(readme.rstrip().splitlines()[-2:]))
    print(f"\nThe project stays in {project}; try: acpstack chat --cwd {project}")
    return code


def _isolate(home: Path) -> None:
    """The demo (its chat here, and the agent, which inherits the environment) keeps its
    config, state, cache, data and session store in `home`, beside the project copy: the
    user's own directories are neither read nor written."""
    for variable, folder in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
    ):
        os.environ[variable] = str(home / folder)
    os.environ["ACPSTACK_STORE"] = str(home / "sessions.sqlite3")
    for variable in NOT_FOR_THE_DEMO:
        os.environ.pop(variable, None)
