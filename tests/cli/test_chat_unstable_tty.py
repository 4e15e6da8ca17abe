"""`acpstack chat --unstable` in a real terminal (tmux): `/title`, `/archive`, `/unarchive`,
`/sessions --all` and `/status` against the real `acpstack agent --unstable` process
(listed in `/help` only when offered, a one-line error otherwise, the chat going on), and
subagents and inter-session messages shown once (tests/e2e/peers/unstable_agent.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "peers"))
from term import HAVE_TMUX, Tmux  # noqa: E402

pytestmark = [pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")]
CHAT = [sys.executable, "-m", "acpstack", "chat"]
REFERENCE = [sys.executable, "-m", "acpstack", "agent", "--unstable"]
E2E_AGENT = [sys.executable, str(Path(__file__).parents[1] / "e2e" / "peers" / "unstable_agent.py")]
CHILDREN_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "children_agent.py")]
STABLE_AGENT = [sys.executable, str(Path(__file__).parent / "peers" / "chat_agent.py")]

Start = Callable[..., Tmux]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        "ACPSTACK_STORE": str(tmp_path / "sessions.db"),
        "CHILDREN_STORE": str(tmp_path / "children.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
    }
    terms: list[Tmux] = []

    def run(
        *args: str, connected: str = "connected to acpstack reference agent", **extra: str
    ) -> Tmux:
        term = Tmux(tmp_path, width=120, height=50)
        terms.append(term)
        term.start([*CHAT, *args], workspace, {**env, **extra})
        term.wait_for(connected)
        term.wait_for(lambda s: s.rstrip().endswith(">"))
        return term

    yield run
    for term in terms:
        term.close()


def send(term: Tmux, line: str) -> str:
    """Type a line, Enter; returns what the screen shows after it once the prompt is back."""
    screen = term.submit(line)
    return screen[screen.rindex(f"> {line}") :].rstrip()


def sessions_listed(answer: str) -> dict[str, str]:
    """`/sessions` output: session id -> the rest of its line."""
    rows = [
        line[2:].split(maxsplit=1) for line in answer.splitlines()[1:] if line[:2] in ("* ", "  ")
    ]
    return {row[0]: row[1] if len(row) > 1 else "" for row in rows}


def current_session(term: Tmux) -> str:
    answer = send(term, "/status")
    return answer.splitlines()[1].split()[1].rstrip(":")


def test_session_commands_against_the_reference_agent(start: Start) -> None:
    term = start("--unstable", "--", *REFERENCE)
    assert term.screen().count("auth: not required") == 1
    help_text = send(term, "//help")
    for usage in ("/title TEXT", "/archive [ID]", "/unarchive [ID]", "/status [ID]"):
        assert usage in help_text
    assert "/sessions [--all]" in help_text
    term.type("/unar")
    term.keys("Tab")  # completed: the agent offers it
    term.wait_for(lambda screen: screen.rstrip().endswith("> /unarchive"))
    term.keys("C-c")
    first = current_session(term)
    answer = send(term, "/title  Fix the   parser")
    assert answer.count("session: Fix the parser") == 1  # the agent's update and ours: once
    answer = send(term, "/status")
    assert f"session {first}: open" in answer and "auth: not required" in answer
    answer = send(term, "/archive")
    assert f"archived session {first}; starting a new one" in answer
    second = current_session(term)
    assert second != first
    assert first not in sessions_listed(send(term, "/sessions"))
    listed = sessions_listed(send(term, "/sessions --all"))
    assert listed[first].endswith("Fix the parser  (archived)")
    assert "(archived)" not in listed[second]
    assert f"session {first}: saved" in send(term, f"/status {first}")
    answer = send(term, f"/unarchive {first}")
    assert f"unarchived session {first} (/load {first} continues it)" in answer
    assert "(archived)" not in sessions_listed(send(term, "/sessions --all"))[first]
    answer = send(term, f"/archive {first}")  # another session: the chat stays where it is
    assert f"archived session {first}" in answer and "new session" not in answer
    assert current_session(term) == second


def test_bad_session_commands_are_one_line_and_the_chat_goes_on(start: Start) -> None:
    term = start("--unstable", "--", *REFERENCE)
    for line, error in [
        ("/archive nope", "error from the agent: Resource not found: nope (code -32002)"),
        ("/unarchive nope", "error from the agent: Resource not found: nope (code -32002)"),
        ("/status nope", "error from the agent: Resource not found: nope (code -32002)"),
        ("/title", "error: usage: /title TEXT"),
        ("/status a b", "error: usage: /status [ID]"),
        ("/sessions --bogus", "error: usage: /sessions [--all]"),
    ]:
        answer = send(term, line)
        assert answer.splitlines()[1:] == [error, ">"], answer
    assert "Traceback" not in term.screen()
    send(term, "/title still here")
    term.keys("C-d")
    assert term.exit_code() == 0


def test_without_unstable_the_commands_are_hidden_and_say_why(start: Start) -> None:
    term = start("--", *REFERENCE)
    help_text = send(term, "//help")
    for hidden in ("/title", "/archive", "/unarchive", "/status", "--all"):
        assert hidden not in help_text
    assert "auth:" not in term.screen()
    answer = " ".join(send(term, "/title hello").split())  # as one line, however wrapped
    assert (
        "error: session titles (session/set_title) is an unstable ACP method: start the chat "
        "with --unstable (or `unstable = true` in the agent's profile)"
    ) in answer
    answer = send(term, "/sessions --all")
    assert "archived sessions (session/archive) is an unstable ACP method" in answer
    assert "Traceback" not in term.screen()
    term.keys("C-d")
    assert term.exit_code() == 0


def test_commands_an_unstable_agent_does_not_offer_are_hidden(start: Start) -> None:
    term = start("--unstable", "--", *STABLE_AGENT, connected="connected to chat-agent")
    help_text = send(term, "//help")
    for hidden in ("/title", "/archive", "/unarchive", "/status", "--all"):
        assert hidden not in help_text
    answer = send(term, "/title hello")
    assert (
        answer.splitlines()[1]
        == "error: the agent does not offer session titles (session/set_title)"
    )
    answer = send(term, "/status")
    assert (
        answer.splitlines()[1] == "error: the agent does not offer session status (session/status)"
    )
    term.type("/unar")
    term.keys("Tab")  # completes no command the agent does not offer
    term.type(" z")
    term.keys("Enter")
    term.wait_for("echo: /unar z")
    term.keys("C-d")
    assert term.exit_code() == 0


def test_a_title_the_agent_does_not_announce_is_shown_from_its_answer(start: Start) -> None:
    term = start("--unstable", "--", *CHILDREN_AGENT, connected="connected to")
    answer = send(term, "/title  Quiet   title")
    assert answer.splitlines()[1:] == ["session: Quiet title", ">"]


def test_archiving_goes_on_when_no_new_session_can_start(start: Start) -> None:
    term = start(
        "--unstable", "--", *CHILDREN_AGENT, connected="connected to", CHILDREN_MAX_SESSIONS="1"
    )
    first = current_session(term)
    answer = send(term, "/archive")
    assert answer.splitlines()[1:] == [
        f"archived session {first}; starting a new one",
        "error from the agent: Internal error: no more sessions today (code -32603)",
        ">",
    ]
    assert current_session(term) == first  # still the chat's session: it can come back
    answer = send(term, "hello")
    assert "error from the agent" in answer and "Traceback" not in term.screen()
    send(term, "/unarchive")
    send(term, f"/load {first}")
    assert "echo: hello again" in send(term, "hello again")


def test_subagents_and_messages_are_shown_once(start: Start) -> None:
    term = start("--unstable", "--", *E2E_AGENT, connected="connected to")
    answer = send(term, "subagent")
    assert answer.count("✉ main → Researcher: Find the bug. Report back.") == 1
    assert answer.count("● Researcher  subagent · idle: end_turn") == 1
    assert "running" not in answer  # the live line was replaced in place
    assert answer.index("✉ main") < answer.index("● Researcher") < answer.index("child=")


def test_a_loaded_history_shows_each_child_and_message_once(start: Start, tmp_path: Path) -> None:
    made = subprocess.run(
        [*CHAT, "--unstable", "-p", "delegate", "--json", "--", *CHILDREN_AGENT],
        cwd=tmp_path,
        env={**os.environ, "CHILDREN_STORE": str(tmp_path / "children.db")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert made.returncode == 0, made.stderr
    session_id = json.loads(made.stdout.splitlines()[-1])["sessionId"]
    term = start("--unstable", "--session", session_id, "--", *CHILDREN_AGENT, connected="you:")
    screen = term.wait_for("delegated")
    assert screen.count("✉ main → Worker: Do X. Then Y.") == 1
    assert screen.count("● Worker  subagent · idle: end_turn") == 1
    assert "running" not in screen and "requires_action" not in screen  # changes within it
