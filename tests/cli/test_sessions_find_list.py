"""Finding a recorded session by a prefix of either id or by its name (`chat --session`,
`sessions show`), `sessions list` as aligned columns that fit the terminal (seen in tmux),
`--limit`, `sessions prune`, the bound on unnamed sessions, and the refused empty prompt.
Real `acpstack` processes; a few records are written as files where only their number or
their age matters (the command reads them as it reads its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from term import HAVE_TMUX, Tmux  # noqa: E402

ACPSTACK = [sys.executable, "-m", "acpstack"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Readme\n")
    monkeypatch.setenv("ACPSTACK_STORE", str(tmp_path / "agent.db"))
    return workspace


def run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACPSTACK, *args],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def records(ws: Path, *flags: str) -> list[dict[str, Any]]:
    done = run(ws, "sessions", "list", "--format", "json", *flags)
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def sessions_dir() -> Path:
    folder = Path(os.environ["XDG_STATE_HOME"]) / "acpstack" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_record(record_id: str, cwd: Path, day: int, **fields: Any) -> None:
    """A record as `acpstack chat` writes it, last used on November `day`, 2026."""
    data = {
        "id": record_id,
        "session_id": fields.pop("session_id", f"sess{record_id}" + "0" * 16),
        "cwd": str(cwd),
        "agent": "the built-in agent (acpstack agent)",
        "created_at": f"2026-11-{day:02d}T10:00:00+0000",
        "updated_at": f"2026-11-{day:02d}T10:00:00+0000",
        **fields,
    }
    (sessions_dir() / f"{record_id}.json").write_text(json.dumps(data))


def test_a_prefix_of_either_id_or_the_name_continues_a_session(ws: Path) -> None:
    first = run(ws, "chat", "-s", "notes", "-p", "/read README.md", "--format", "json")
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout.splitlines()[-1])["sessionId"]
    [record] = records(ws)
    for ref in (record["id"][:5], session_id[:7], "notes"):
        more = run(ws, "chat", "--session", ref, "-p", "/plan", "--format", "json")
        assert more.returncode == 0, (ref, more.stderr)
        assert json.loads(more.stdout.splitlines()[-1])["sessionId"] == session_id
    [record] = records(ws)
    assert record["turns"] == 4 and record["name"] == "notes"  # one record, continued
    shown = run(ws, "sessions", "show", record["id"][:4])
    assert shown.returncode == 0 and f"session_id: {session_id}" in shown.stdout


def test_an_ambiguous_prefix_is_refused(ws: Path) -> None:
    write_record("ab1111111111", ws, 20)
    write_record("ab2222222222", ws, 21)
    for command in (["chat", "--session", "ab", "-p", "/plan"], ["sessions", "show", "ab"]):
        done = run(ws, *command)
        assert done.returncode == 2, done.stderr
        assert "'ab' fits 2 recorded sessions" in done.stderr
        assert "ab1111111111" in done.stderr and "Traceback" not in done.stderr
    unique = run(ws, "sessions", "show", "ab2")
    assert unique.returncode == 0 and "id: ab2222222222" in unique.stdout
    unknown = run(ws, "chat", "--session", "zz-not-a-session", "-p", "/plan")
    assert unknown.returncode == 4  # not recorded: the agent is asked, and has none


def test_a_session_of_another_directory_is_named_with_its_directory(ws: Path) -> None:
    other = ws.parent / "other"
    other.mkdir()
    write_record("cd3333333333", other, 20)
    done = run(ws, "chat", "--session", "cd33", "-p", "/plan")
    assert done.returncode == 2 and f"belongs to {other}" in done.stderr


def test_the_empty_prompt_is_refused(ws: Path) -> None:
    for prompt in ("", "  \n\t"):
        done = run(ws, "chat", "-p", prompt)
        assert done.returncode == 2, done.stderr
        assert "the prompt is empty" in done.stderr and done.stdout == ""
    assert records(ws) == []  # no agent was started, no session made


def _five_records(ws: Path) -> None:
    other = ws.parent / "elsewhere"
    for day, (record_id, name, title) in enumerate(
        [
            ("aaaa00000001", None, "Fix the parser " + "and more " * 12),
            ("bbbb00000002", "work", None),
            ("cccc00000003", "a-name-longer-than-any-column-should-be-allowed", "Short"),
            ("dddd00000004", None, None),
        ],
        start=10,
    ):
        write_record(record_id, ws, day, name=name, title=title, turns=day)
    write_record("eeee00000005", other, 25, name="elsewhere", turns=1)


@pytest.mark.skipif(not HAVE_TMUX, reason="tmux is not installed")
@pytest.mark.parametrize("width", [80, 200])
def test_the_list_is_aligned_and_fits_the_terminal(ws: Path, tmp_path: Path, width: int) -> None:
    _five_records(ws)
    term = Tmux(tmp_path, width, height=20)
    env = {
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
        "PATH": os.environ["PATH"],
        "TERM": "xterm-256color",
    }
    try:
        term.start([*ACPSTACK, "sessions", "list"], ws, env)
        assert term.exit_code() == 0
        rows = [row.rstrip() for row in term.rows() if row.strip()]
    finally:
        term.close()
    # Last used first, one row each (nothing wrapped), none wider than the terminal.
    assert len(rows) == 5 and all(len(row) <= width for row in rows), rows
    names = [row.split()[0] for row in rows]
    assert names[1] == "-" and names[2].startswith("a-name") and names[3:] == ["work", "-"]
    ids = ["dddd00000004", "cccc00000003", "bbbb00000002", "aaaa00000001"]
    column = rows[0].index("ID")
    assert [row[column : column + 12] for row in rows[1:]] == ids  # whole, and aligned
    turns_end = rows[0].index("TURNS") + len("TURNS")
    assert [row[turns_end - 2 : turns_end].strip() for row in rows[1:]] == ["13", "12", "11", "10"]
    assert "Fix the p" in rows[4] and rows[4].endswith("…")  # the long title is cut, marked
    if width == 200:
        assert "a-name-longer-than-any-column-should-be-allowed" in rows[2]  # room for it
    else:
        assert "a-name-longer-than-any-column-should-be-allowed" not in rows[2]
        assert "…" in rows[2].split()[0]


def test_the_list_on_a_pipe_is_whole_and_limited(ws: Path) -> None:
    _five_records(ws)
    done = run(ws, "sessions", "list")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ID", "LAST", "USED", "TURNS", "AGENT", "TITLE"]
    assert len(lines) == 5 and "…" not in done.stdout  # this directory's four, uncut
    assert "a-name-longer-than-any-column-should-be-allowed" in lines[2]
    starts = {
        line.index(i) for line, i in zip(lines[1:], ["dddd", "cccc", "bbbb", "aaaa"], strict=True)
    }
    assert starts == {lines[0].index("ID")}  # aligned
    limited = run(ws, "sessions", "list", "--limit", "2")
    assert [line.split()[1] for line in limited.stdout.splitlines()[1:]] == [
        "dddd00000004",
        "cccc00000003",
    ]
    assert "2 more" in limited.stderr
    assert [r["id"] for r in records(ws, "--limit", "1", "--all")] == ["eeee00000005"]


def test_prune_says_what_it_removes(ws: Path) -> None:
    _five_records(ws)
    refused = run(ws, "sessions", "prune")
    assert refused.returncode == 2 and "--older-than AGE, --unnamed" in refused.stderr
    bad_age = run(ws, "sessions", "prune", "--older-than", "soon")
    assert bad_age.returncode == 2 and "is not an age" in bad_age.stderr
    dry = run(ws, "sessions", "prune", "--unnamed", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert [line.split(":")[0] for line in dry.stdout.splitlines()] == ["would forget"] * 2
    assert "dddd00000004" in dry.stdout and "aaaa00000001" in dry.stdout
    assert "would forget 2 recorded sessions" in dry.stderr and "nothing was removed" in dry.stderr
    assert len(records(ws, "--all")) == 5
    unnamed = run(ws, "sessions", "prune", "--unnamed")
    assert unnamed.returncode == 0 and "forgot 2 recorded sessions" in unnamed.stderr
    assert [r["id"] for r in records(ws, "--all")] == [
        "eeee00000005",
        "cccc00000003",
        "bbbb00000002",
    ]
    old = run(ws, "sessions", "prune", "--older-than", "1d", "--all")  # all are days old
    assert old.returncode == 0 and "forgot 3 recorded sessions" in old.stderr
    assert records(ws, "--all") == []


def test_unnamed_sessions_do_not_pile_up(ws: Path) -> None:
    for n in range(31):
        write_record(f"old{n:09d}", ws, 1 + n % 27)
    write_record("named0000000", ws, 1, name="kept")
    done = run(ws, "chat", "-p", "/plan", "--format", "json")
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout.splitlines()[-1])["sessionId"]
    left = records(ws)
    unnamed = [r for r in left if r["name"] is None]
    assert len(unnamed) == 30 and unnamed[0]["session_id"] == session_id
    assert any(r["name"] == "kept" for r in left)  # a named session is never trimmed
