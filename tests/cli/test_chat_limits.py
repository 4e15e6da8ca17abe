"""`acpstack chat` keeps its memory bounded whatever the agent sends: a flood of stderr
lines, a message larger than the wire's limit, bytes that are not JSON or not UTF-8.
Real chat processes against a hand-written agent (peers/raw_agent.py)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack.cli._tap import TapTransport
from acpstack.transports import memory_pair

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(PEERS))
from rendezvous import Rendezvous  # noqa: E402

RAW_AGENT = [sys.executable, str(PEERS / "raw_agent.py")]
MB = 1024 * 1024


def memory_mb(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (the peak so far) of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def run_chat_measured(
    tmp_path: Path, prompt: str, *flags: str, work_timeout: float = 60
) -> tuple[float, float, str, str]:
    """One headless turn against the raw agent. Returns chat's RSS before the agent's work,
    its peak RSS once the work is done (the agent waits meanwhile), stdout and stderr."""
    rendezvous = Rendezvous(tmp_path)
    out_path = tmp_path / "out"
    cmd = [sys.executable, "-m", "acpstack", "chat", "-p", prompt, *flags, "--", *RAW_AGENT]
    with out_path.open("wb") as out:
        chat = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=dict(os.environ, **rendezvous.env),
        )
        try:
            rendezvous.expect("before")
            before = memory_mb(chat.pid, "VmRSS")
            rendezvous.go()
            rendezvous.expect("after", timeout=work_timeout)
            peak = memory_mb(chat.pid, "VmHWM")
            rendezvous.go()
            _, stderr = chat.communicate(timeout=30)
        finally:
            chat.kill()
            rendezvous.close()
    assert chat.returncode == 0, stderr.decode()[-3000:]
    return before, peak, out_path.read_text(errors="replace"), stderr.decode()


def records(stdout: str) -> list[dict[str, Any]]:
    """The wire records of a `--json` run (which ends with its result record)."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    if lines and lines[-1].get("type") == "result":
        lines.pop()
    return lines


def agent_texts(lines: list[dict[str, Any]]) -> list[str]:
    return [
        r["message"]["params"]["update"]["content"]["text"]
        for r in lines
        if r["direction"] == "recv"
        and isinstance(r.get("message"), dict)
        and r["message"].get("method") == "session/update"
    ]


def test_a_flood_of_agent_stderr_does_not_grow_the_chat(tmp_path: Path) -> None:
    # 2 million lines (80 MB): the chat used to keep every one (+169 MB here, 1.7 GB for 20 million).
    before, peak, stdout, stderr = run_chat_measured(tmp_path, "stderr 2000000")
    assert peak - before < 50, f"RSS grew from {before:.0f} to {peak:.0f} MiB"
    assert stdout.strip() == "done"


@pytest.mark.timeout(120)
def test_a_message_over_the_limit_is_reported_by_size_quickly_and_in_bounded_memory(
    tmp_path: Path,
) -> None:
    # 100 MiB in one line (the wire's limit is 64 MiB). The tap used to re-copy its buffer on
    # every chunk (over a minute here) and print the whole line.
    size = 100 * MB
    before, peak, stdout, _ = run_chat_measured(
        tmp_path, f"bigline {size}", "--json", work_timeout=30
    )
    lines = records(stdout)
    [oversized] = [r for r in lines if "oversized" in r]
    assert oversized["direction"] == "recv"
    assert oversized["oversized"]["size"] > size
    assert oversized["oversized"]["prefix"].startswith(
        '{"jsonrpc": "2.0", "method": "session/update"'
    )
    assert len(oversized["oversized"]["prefix"]) <= 200
    assert len(stdout) < 100_000  # the line itself is never printed
    assert agent_texts(lines) == ["done"]  # and the connection went on
    # Each decoder may hold up to the limit before it knows the line is too long.
    assert peak - before < 200, f"RSS grew from {before:.0f} to {peak:.0f} MiB"


@pytest.mark.timeout(120)
def test_a_message_over_the_limit_is_shown_as_a_notice(tmp_path: Path) -> None:
    # Not --json: the person (or script) reading the chat's output learns that an update
    # from the agent was lost, and the turn goes on.
    size = 65 * MB  # the wire's limit is 64 MiB
    _, _, stdout, stderr = run_chat_measured(tmp_path, f"bigline {size}", work_timeout=30)
    notices = [line for line in stderr.splitlines() if line.startswith("(dropped")]
    assert len(notices) == 1, stderr
    found = re.fullmatch(
        r"\(dropped session/update from the agent: too_large, message of at least (\d+) "
        r"bytes exceeds the limit of (\d+) bytes\)",
        notices[0],
    )
    assert found is not None, notices[0]
    assert int(found[1]) > size and int(found[2]) == 64 * MB
    assert stdout.strip() == "done"
    assert "Traceback" not in stderr


def test_a_large_message_within_the_limit_arrives_whole(tmp_path: Path) -> None:
    _, _, stdout, _ = run_chat_measured(tmp_path, f"bigline {8 * MB}", "--json")
    texts = agent_texts(records(stdout))
    assert [len(t) for t in texts] == [8 * MB, 4]  # the 8 MiB text, then "done"


def test_a_poisoned_line_loses_nothing_around_it(tmp_path: Path) -> None:
    _, _, stdout, stderr = run_chat_measured(tmp_path, "poison", "--json")
    lines = records(stdout)
    assert agent_texts(lines) == ["first", "second", "done"]
    [poisoned] = [r for r in lines if isinstance(r.get("message"), str)]
    assert poisoned == {
        "direction": "recv",
        "message": '{"jsonrpc": "2.0", "method": "\ufffd\ufffd not json',
    }
    assert "Traceback" not in stderr


def test_a_json_line_with_invalid_utf8_loses_nothing_around_it(tmp_path: Path) -> None:
    _, _, stdout, _ = run_chat_measured(tmp_path, "poison-utf8", "--json")
    lines = records(stdout)
    assert agent_texts(lines) == ["first", "second", "done"]


def chunk_line(text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "s1", "update": update},
            }
        ).encode()
        + b"\n"
    )


@pytest.mark.parametrize(
    "poison",
    [b'{"jsonrpc": "2.0", "method": "bad\xff"}\n', b"\xff\xfe not json\n", b"[" * 100_000 + b"\n"],
)
async def test_one_read_with_a_poisoned_line_gives_three_records_and_passes_every_byte_on(
    poison: bytes,
) -> None:
    agent_side, client_side = memory_pair()
    seen: list[dict[str, Any]] = []
    passed: list[bytes] = []
    arrived = asyncio.Event()

    def on_data(data: bytes) -> None:
        passed.append(data)
        arrived.set()

    tap = TapTransport(client_side, seen.append)
    tap.start_reading(on_data, lambda: None)
    chunk = chunk_line("first") + poison + chunk_line("second")
    agent_side.write(chunk)  # one write: one read on the other side
    await asyncio.wait_for(arrived.wait(), 10)
    assert passed == [chunk]  # every byte went on to the connection
    assert agent_texts([seen[0], seen[2]]) == ["first", "second"]
    assert seen[1] == {
        "direction": "recv",
        "message": poison[:-1].decode("utf-8", errors="replace"),
    }
    arrived.clear()
    agent_side.write(chunk_line("third"))  # and reading goes on
    await asyncio.wait_for(arrived.wait(), 10)
    assert agent_texts(seen[3:]) == ["third"] and len(passed) == 2
