"""`acpstack chat` as a person meets it, in a real terminal (tmux) at 40, 80 and 200 columns:
nothing cropped, one live line per tool call, Ctrl-C and Ctrl-D, the history file,
multi-line paste, completion. The agent is peers/chat_agent.py; what it received is in
its log ($PEER_LOG)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from chat_agent import LONG_WORD, TABLE_PATH, UNBROKEN_CELL  # noqa: E402
from rendezvous import Rendezvous  # noqa: E402
from term import HAVE_TMUX, Tmux  # noqa: E402

pytestmark = pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")
CHAT = [
    sys.executable,
    "-m",
    "acpstack",
    "chat",
    "--",
    sys.executable,
    str(PEERS / "chat_agent.py"),
]


class Session:
    def __init__(self, tmp_path: Path, width: int, height: int = 40) -> None:
        self.tmp_path = tmp_path
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.log = tmp_path / "prompts.jsonl"
        self.rendezvous = Rendezvous(tmp_path)
        self.env = {
            "PEER_LOG": str(self.log),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "TERM": "xterm-256color",
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(PEERS),
        }
        self.width, self.height = width, height
        self.term = Tmux(tmp_path, width, height)

    def start(self, *flags: str, rendezvous: bool = False) -> Tmux:
        env = dict(self.env, **self.rendezvous.env) if rendezvous else self.env
        self.term.start([*CHAT[:4], *flags, *CHAT[4:]], self.workspace, env)
        self.term.wait_for("connected to chat-agent")
        self.term.wait_for(at_prompt)
        return self.term

    def prompts(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [entry for entry in entries if "text" in entry]

    def close(self) -> None:
        self.term.close()
        self.rendezvous.close()


def at_prompt(screen: str) -> bool:
    return screen.rstrip().endswith(">")


def prompts_on(screen: str) -> int:
    return sum(1 for line in screen.splitlines() if line.startswith(">"))


@pytest.fixture
def session(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Session]:
    width = getattr(request, "param", 80)
    made = Session(tmp_path, width)
    yield made
    made.close()


def send(term: Tmux, text: str) -> str:
    before = prompts_on(term.screen())
    term.type(text)
    term.keys("Enter")
    return term.wait_for(lambda s: prompts_on(s) > before and at_prompt(s))


@pytest.mark.parametrize("session", [40, 80, 200], indirect=True, ids=lambda w: f"{w}cols")
def test_every_word_of_a_long_streamed_message_is_on_screen_once(session: Session) -> None:
    term = session.start()
    screen = send(term, "long 400")
    words = re.findall(r"w\d{5}", screen)
    # The code block (the third part of the message: one line of words w00133-w00198) is
    # cut at the terminal's width, marked with "…", never wrapped; every other word is
    # on screen, and no word twice.
    in_code = {f"w{i:05d}" for i in range(133, 199)}
    assert len(words) == len(set(words))
    assert set(words) - in_code == {f"w{i:05d}" for i in range(1, 401)} - in_code
    [code_row] = [row for row in screen.splitlines() if "w00133" in row]
    assert code_row.rstrip().endswith("…") and "w00198" not in screen
    assert screen.count("END-OF-MESSAGE") == 1
    rows = session.term.rows()
    assert LONG_WORD in "".join(row.strip() for row in rows)  # the long word, wrapped, whole
    assert all(len(row) <= session.width for row in rows)


@pytest.mark.parametrize("session", [40, 80, 200], indirect=True, ids=lambda w: f"{w}cols")
def test_every_cell_of_a_wide_table_is_on_screen(session: Session) -> None:
    term = session.start()
    screen = send(term, "table")
    assert screen.count("END-OF-TABLES") == 1
    assert "…" not in screen  # no cell cut short
    words = re.findall(r"w\d{5}", screen)
    assert sorted(words) == [f"w{i:05d}" for i in range(1, 27)]  # each cell whole, once
    assert screen.count("Q") == len(UNBROKEN_CELL)  # the unbroken cell, folded, whole
    # The path, in the last column (folded there, or whole on a row), reads on in order.
    assert TABLE_PATH in "".join(screen.split())
    assert "|" not in screen  # drawn as tables (or as records), not left as Markdown
    rows = session.term.rows()
    assert all(len(row) <= session.width for row in rows)


@pytest.mark.parametrize("session", [40, 200], indirect=True, ids=lambda w: f"{w}cols")
def test_one_live_line_per_tool_call_updated_in_place(session: Session) -> None:
    term = session.start(rendezvous=True)
    term.type("tools")
    term.keys("Enter")
    session.rendezvous.expect("tool-running")  # the agent waits while the tool call runs
    screen = term.wait_for("in progress")
    assert screen.count("Build the thing") == 1 and "pending" not in screen, screen
    session.rendezvous.go()
    screen = term.wait_for(lambda s: "tools done" in s and at_prompt(s))
    # (at 40 columns a tool line wraps: its status is on the next row)
    assert screen.count("Build the thing") == 1 and "Build the thing (step 2)" in screen
    assert "completed" in screen
    assert screen.count("Check the thing") == 1 and "failed" in screen
    assert "in progress" not in screen and "pending" not in screen  # no line per status
    assert screen.count("built OK") == 1


def test_ctrl_c_clears_the_line_and_twice_on_an_empty_line_quits(session: Session) -> None:
    term = session.start()
    term.type("never sent")
    term.wait_for("never sent")
    term.keys("C-c")
    term.wait_for(lambda s: "never sent" not in s)  # cleared in place, not sent
    send(term, "sent")
    assert [p["text"] for p in session.prompts()] == ["sent"]
    term.keys("C-c")
    term.wait_for("Ctrl-C again or Ctrl-D to quit")
    term.keys("C-c")
    assert term.exit_code() == 0


def test_ctrl_c_cancels_a_running_turn_and_twice_quits(session: Session) -> None:
    term = session.start()
    term.type("hang")
    term.keys("Enter")
    term.wait_for("hanging")
    term.keys("C-c")
    screen = term.wait_for(lambda s: "turn ended: cancelled" in s and at_prompt(s))
    assert "Traceback" not in screen
    term.type("stubborn")  # a turn that goes on after session/cancel
    term.keys("Enter")
    term.wait_for("not stopping")
    term.keys("C-c")
    term.wait_for(lambda s: s.count("cancelling the turn") == 2)
    term.keys("C-c")
    assert term.exit_code() == 130
    lines = term.screen().splitlines()
    # What Ctrl-C prints starts its own line (the terminal's "^C" echo is not left before it).
    assert lines.count("cancelling the turn (Ctrl-C again to quit)") == 2, lines
    assert "quitting" in lines and not any("^C" in line for line in lines), lines


def test_escape_at_a_permission_prompt_shows_the_rejection(session: Session) -> None:
    term = session.start()
    term.type("ask 1")
    term.keys("Enter")
    term.wait_for("choose 1-2")
    term.keys("Escape")
    screen = term.wait_for(lambda s: "answer 0:" in s and at_prompt(s))
    assert "(Esc rejects, Ctrl-C cancels the turn): rejected" in screen
    assert "(none)" not in screen


def test_config_shows_a_boolean_as_it_is_typed(session: Session) -> None:
    term = session.start()
    screen = send(term, "/config")
    assert "verbose = false" in screen and "(true | false)" in screen
    screen = send(term, "/config verbose true")
    assert "verbose = true" in screen
    assert "True" not in screen and "False" not in screen  # not Python's spelling
    assert {"config": {"verbose": True}} in [
        json.loads(line) for line in session.log.read_text().splitlines()
    ]


def test_ctrl_d_quits(session: Session) -> None:
    term = session.start()
    term.keys("C-d")
    assert term.exit_code() == 0


def test_history_is_kept_across_runs_without_permission_answers(session: Session) -> None:
    term = session.start()
    send(term, "remember me")
    term.type("ask 1")
    term.keys("Enter")
    term.wait_for("choose 1-2")
    term.keys("2")
    term.wait_for(lambda s: "answer 0: no" in s and at_prompt(s))
    term.keys("C-d")
    assert term.exit_code() == 0
    history = (session.tmp_path / "state" / "acpstack" / "history").read_text()
    assert "+remember me" in history and "+ask 1" in history
    assert "+2\n" not in history  # the permission answer is a key press, not a prompt
    term.close()
    session.term = Tmux(session.tmp_path / "ws", session.width, session.height)
    term = session.start()
    term.keys("Up", "Up")
    term.wait_for(lambda s: s.rstrip().endswith("> remember me"))
    term.keys("Enter")
    term.wait_for(lambda s: s.count("echo: remember me") == 1 and at_prompt(s))
    assert [p["text"] for p in session.prompts()].count("remember me") == 2


def test_a_pasted_block_is_one_prompt_and_alt_enter_is_a_newline(session: Session) -> None:
    term = session.start()
    term.paste("line one\nline two\nline three", session.tmp_path)
    term.wait_for("line three")
    term.keys("Enter")
    term.wait_for(lambda s: "echo: line one" in s and at_prompt(s))
    term.type("first")
    term.keys("M-Enter")
    term.type("second")
    term.keys("Escape", "Enter")
    term.type("third")
    term.keys("Enter")
    term.wait_for(lambda s: "echo: first" in s and at_prompt(s))
    assert [p["text"] for p in session.prompts()] == [
        "line one\nline two\nline three",
        "first\nsecond\nthird",
    ]


def test_completion_of_commands_and_files(session: Session) -> None:
    (session.workspace / "notes-for-you.md").write_text("notes\n")
    term = session.start()
    term.type("/mo")
    term.keys("Tab")
    term.wait_for(lambda s: s.rstrip().endswith("> /mode"))
    term.keys("C-c")
    term.type("look at @notes-f")
    term.keys("Tab")
    term.wait_for("@notes-for-you.md")
    term.keys("Enter")
    term.wait_for(lambda s: "echo: look at" in s and at_prompt(s))
    [prompt] = session.prompts()
    assert prompt["text"] == "look at @notes-for-you.md"
    assert prompt["links"] == [(session.workspace / "notes-for-you.md").as_uri()]


def test_thoughts_are_shown_apart_from_the_answer(session: Session) -> None:
    term = session.start()
    screen = send(term, "think")
    assert screen.count("thinking:") == 1 and "weighing the options" in screen
    assert "decided" in screen


def test_an_update_while_the_prompt_waits_is_shown_above_it(session: Session) -> None:
    term = session.start()
    send(term, "late")
    term.type("half typed")
    # The prompt, and what was typed, stay (drawn again under the update: wait for both,
    # the screen can be read between prompt_toolkit's erase and its redraw).
    screen = term.wait_for(
        lambda s: "session: LATE-TITLE" in s and s.rstrip().endswith("> half typed")
    )
    assert screen.index("session: LATE-TITLE") < screen.rindex("> half typed")
    term.keys("Enter")
    term.wait_for("echo: half typed")


def test_a_turn_over_the_timeout_is_cancelled_and_the_chat_goes_on(session: Session) -> None:
    term = session.start("--timeout", "1")
    term.type("hang")
    term.keys("Enter")
    screen = term.wait_for(lambda s: "turn ended: cancelled" in s and at_prompt(s))
    assert "the turn took over 1 s: cancelling it" in screen
    send(term, "still here")
    assert [p["text"] for p in session.prompts()] == ["hang", "still here"]


def test_an_elicitation_form_is_answered_at_the_keyboard(session: Session) -> None:
    term = session.start()
    term.type("form")
    term.keys("Enter")
    term.wait_for("the agent asks: Tell me about you")
    term.wait_for("Your name *")
    term.type("Ada")
    term.keys("Enter")
    term.wait_for("[2] Green")
    term.keys("2")  # one key picks an option
    term.wait_for("Agree")
    term.keys("y")
    term.wait_for("Age [30]")
    term.keys("Enter")  # keeps the default
    term.wait_for("s sends the answers")
    term.keys("s")
    screen = term.wait_for(lambda s: "form: accept" in s and at_prompt(s))
    assert 'form: accept {"age": 30, "agree": true, "color": "g", "name": "Ada"}' in screen
    assert "color *: Green" in screen and "Agree: y/n yes" in screen
    term.type("form")
    term.keys("Enter")
    term.wait_for(lambda s: s.count("Your name *") == 2)
    term.keys("C-d")  # a required field left out: the form is declined
    term.wait_for(lambda s: "form: decline" in s and at_prompt(s))
