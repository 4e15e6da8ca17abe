"""`LocalAccess` and the fallback policy's bad input, in one process (real files, real
processes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acpstack import RequestError
from acpstack.agent import (
    CommandResult,
    LocalAccess,
    MemorySessionStore,
    SessionAgent,
    Turn,
    output_content,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli" / "peers"))
from procs import assert_ended  # noqa: E402

pytestmark = pytest.mark.timeout(30)


async def test_aclose_ends_a_command_never_released_and_refuses_new_ones(tmp_path: Path) -> None:
    local = LocalAccess("s1", str(tmp_path))
    terminal_id = await local.create("sleep", ["300"])
    pid = local.terminals._pid("s1", terminal_id)
    await local.aclose()
    assert_ended({pid})
    with pytest.raises(RequestError, match="closed"):
        await local.create("true")


async def test_a_command_runs_in_the_session_cwd_unless_told_otherwise(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "elsewhere").mkdir()
    local = LocalAccess("s1", str(tmp_path / "sub"), [str(tmp_path / "elsewhere")])
    try:
        outputs = []
        for cwd in (None, str(tmp_path / "elsewhere")):
            terminal_id = await local.create("pwd", cwd=cwd)
            await local.wait_for_exit(terminal_id)
            outputs.append((await local.output(terminal_id)).output)
            await local.release(terminal_id)
        with pytest.raises(RequestError, match="Permission denied"):
            await local.create("pwd", cwd=str(tmp_path))
    finally:
        await local.aclose()
    real = os.path.realpath(tmp_path)
    assert outputs == [f"{real}/sub\n", f"{real}/elsewhere\n"]


async def test_files_stay_inside_the_roots(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "escape").symlink_to(tmp_path)
    local = LocalAccess("s1", str(tmp_path / "ws"))
    await local.write_text_file(str(tmp_path / "ws" / "a" / "b.txt"), "x\n")
    assert await local.read_text_file(str(tmp_path / "ws" / "a" / "b.txt")) == "x\n"
    with pytest.raises(RequestError, match="outside the session's workspace"):
        await local.write_text_file(str(tmp_path / "ws" / "escape" / "c.txt"), "no\n")
    assert not (tmp_path / "c.txt").exists()


def test_an_unknown_policy_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="fallback must be 'local' or 'refuse', not 'remote'"):
        SessionAgent(store=MemorySessionStore(), fallback="remote")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not 'Local'"):
        Turn(None, [], fallback="Local")  # type: ignore[arg-type]


def result(output: str, **fields: object) -> CommandResult:
    values: dict[str, object] = dict(
        truncated=False, exit_code=0, signal=None, timed_out=False, terminal_id=""
    )
    values.update(fields)
    return CommandResult(output=output, **values)  # type: ignore[arg-type]


def test_output_content_shows_the_end_of_the_output_and_how_it_ended() -> None:
    def text(r: CommandResult) -> str:
        return output_content(r).content.text  # type: ignore[union-attr]

    assert text(result("ok")) == "```\nok\n```\nexit code 0"
    assert text(result("")) == "```\n```\nexit code 0"
    # A fence longer than any run of backticks in the output, so it cannot end the block.
    assert text(result("a ``` b ```` c\n")) == "`````\na ``` b ```` c\n`````\nexit code 0"
    killed = result("x\n", exit_code=None, signal="SIGKILL", timed_out=True, truncated=True)
    assert text(killed).endswith(
        "killed by SIGKILL (timed out); the beginning of the output was dropped (output limit)"
    )
    long = text(result("a" * 70_000 + "END"))
    assert long.startswith("```\n[... 6003 characters not shown]\naaa")
    assert long.endswith("aEND\n```\nexit code 0") and len(long) < 64_100
