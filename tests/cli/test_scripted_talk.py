"""The scripted agent (`acpstack agent` without a model) through the real `acpstack chat`:
a greeting or a question gets an answer and nothing else (no tool call, no permission
request); a task still runs the routine; `/run` runs its command line through `sh -c`,
and the permission request's title is exactly that line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.cli._scripted import kind_of

ACPSTACK = [sys.executable, "-m", "acpstack"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    return workspace


def chat_json(ws: Path, prompt: str, *flags: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    env = dict(os.environ, ACPSTACK_STORE=str(ws.parent / "sessions.db"))
    done = subprocess.run(
        [*ACPSTACK, "chat", "-p", prompt, "--format", "json", *flags],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert lines and lines[-1]["type"] == "result", done.stderr
    return [line["message"] for line in lines[:-1] if "message" in line], lines[-1]


def said(messages: list[dict[str, Any]]) -> str:
    return "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def acted(messages: list[dict[str, Any]]) -> list[str]:
    """The tool calls and requests the agent made (none for a greeting)."""
    kinds = []
    for m in messages:
        if m.get("method") == "session/update":
            kind = m["params"]["update"]["sessionUpdate"]
            if kind in ("tool_call", "plan"):
                kinds.append(kind)
        elif m.get("method", "").startswith(("fs/", "terminal/", "session/request_permission")):
            kinds.append(m["method"])
    return kinds


@pytest.mark.parametrize(
    ("prompt", "answer"),
    [
        ("hello", "Give me a task"),
        ("what does this project do?", "I cannot answer questions"),
    ],
)
def test_a_greeting_or_a_question_gets_an_answer(ws: Path, prompt: str, answer: str) -> None:
    messages, result = chat_json(ws, prompt)
    assert result["stopReason"] == "end_turn" and result["exitCode"] == 0, result
    assert answer in said(messages)
    assert acted(messages) == []
    assert (ws / "README.md").read_text() == "# Readme\n"


def test_a_task_still_runs_the_routine(ws: Path) -> None:
    messages, result = chat_json(ws, "add a note about the tests", "--approve-all")
    assert result["exitCode"] == 0, result
    assert "plan" in acted(messages) and "session/request_permission" in acted(messages)
    assert "add a note about the tests" in (ws / "README.md").read_text()


def test_what_is_a_task_and_what_is_not() -> None:
    assert [kind_of(t) for t in ("hey", "thanks!", "Good morning", "")] == ["greeting"] * 4
    assert [kind_of(t) for t in ("why is it slow?", "Which file has the parser")] == [
        "question",
        "question",
    ]
    tasks = ("Add a line about running the tests with unittest to the notes", "can you fix it?")
    assert [kind_of(t) for t in tasks] == ["task", "task"]


def test_run_goes_through_a_shell_and_its_title_is_what_runs(ws: Path) -> None:
    command = """for i in 1 2; do echo "n  $i" | tr n N; done > out.txt; cat 'out.txt'"""
    messages, result = chat_json(ws, f"/run {command}", "--approve-all")
    assert result["exitCode"] == 0, result
    [asked] = [m for m in messages if m.get("method") == "session/request_permission"]
    tool = asked["params"]["toolCall"]
    assert tool["title"] == f"Run `{command}`"  # quotes and all
    [created] = [m for m in messages if m.get("method") == "terminal/create"]
    assert (created["params"]["command"], created["params"]["args"]) == ("sh", ["-c", command])
    assert (ws / "out.txt").read_text() == "N  1\nN  2\n"
    assert "exited with code 0" in said(messages)
