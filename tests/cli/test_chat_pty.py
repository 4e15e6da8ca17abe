"""`acpstack chat` in a real pseudo-terminal, driving the real reference agent process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

PROMPT = r"\n(?:\x1b\[[0-9;?]*[a-zA-Z])*> "  # a fresh input line (after any terminal control codes)


@pytest.fixture
def chat(tmp_path: Path) -> pexpect.spawn:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    env = dict(os.environ, ACPSTACK_STORE=str(tmp_path / "sessions.db"), TERM="xterm", NO_COLOR="1")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "acpstack", "chat"],
        cwd=str(workspace),
        env=env,
        encoding="utf-8",
        timeout=20,
        dimensions=(50, 160),
    )
    child.expect("connected to acpstack reference agent")
    child.expect("> ")
    yield child
    child.close(force=True)


def workspace_of(child: pexpect.spawn) -> Path:
    return Path(child.cwd)


def test_a_streamed_turn_and_an_agent_slash_command(chat: pexpect.spawn) -> None:
    chat.sendline("/help")
    chat.expect("Built-in commands")  # the client's own commands
    chat.expect("/mode")
    chat.expect("Replace text in a file")  # and the ones the agent advertised
    chat.expect(PROMPT)
    chat.sendline("/plan")  # an agent command: sent to the agent as a prompt
    chat.expect("scripted offline agent")  # streamed from the agent
    chat.expect("There is no plan yet")
    chat.expect(PROMPT)
    chat.sendline("/read README.md")
    chat.expect("# Readme")
    chat.expect(PROMPT)


def test_a_permission_prompt_answered_by_key(chat: pexpect.spawn) -> None:
    chat.sendline("/edit README.md Readme Hello")
    chat.expect("permission requested: Edit README.md")
    chat.expect(r"\+# Hello")  # the diff is shown before the question
    chat.expect("choose 1-4: ")
    chat.sendline("3")  # reject
    chat.expect(PROMPT)
    assert (workspace_of(chat) / "README.md").read_text() == "# Readme\n"
    chat.sendline("/edit README.md Readme Hello")
    chat.expect("choose 1-4: ")
    chat.sendline("1")  # allow once
    chat.expect(PROMPT)
    assert (workspace_of(chat) / "README.md").read_text() == "# Hello\n"


def test_ctrl_c_cancels_a_long_turn_and_the_chat_goes_on(chat: pexpect.spawn) -> None:
    chat.sendline("/run sleep 60")
    chat.expect("choose 1-4: ")
    chat.sendline("1")
    chat.expect("sleep 60")
    chat.sendintr()
    chat.expect("cancelled")
    chat.expect(PROMPT, timeout=10)
    chat.sendline("/read README.md")
    chat.expect("# Readme")
    chat.expect(PROMPT)
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0


def test_builtin_mode_switch_changes_what_the_agent_may_do(chat: pexpect.spawn) -> None:
    chat.sendline("/mode ask")
    chat.expect(PROMPT)
    chat.sendline("/edit README.md Readme Hello")
    chat.expect("ask")
    chat.expect("mode")
    chat.expect(PROMPT)
    assert (workspace_of(chat) / "README.md").read_text() == "# Readme\n"
