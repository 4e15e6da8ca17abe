"""`acpstack conduct` end to end over real pipes: the chat through the two example proxies
and the reference agent, a component killed mid-turn, the conductor itself killed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime
from acpstack.schema import v1 as acp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _example_chain import CHECKS, chat_turn, check_chain  # noqa: E402

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]
RULES = f"{sys.executable} {ROOT / 'examples' / 'proxies' / 'rules.py'}"
AUDIT = f"{sys.executable} {ROOT / 'examples' / 'proxies' / 'audit.py'}"
ACPSTACK = [sys.executable, "-m", "acpstack"]
AGENT = [*ACPSTACK, "agent", "--store", ":memory:"]


def conduct(*proxies: str) -> list[str]:
    return [*ACPSTACK, "conduct", *(f"--proxy={p}" for p in proxies), "--", *AGENT]


def test_chat_through_rules_and_audit_proxies_completes_a_turn_with_tool_calls(
    project: Path,
) -> None:
    records = chat_turn(project, conduct(RULES, AUDIT))
    kinds = [record["kind"] for record in records]
    assert "tool_call" in kinds and "command" in kinds
    edit = next(r for r in records if r["kind"] == "permission")
    assert edit["request"]["toolCall"]["title"] == "Edit README.md"
    assert edit["decision"]["outcome"] == {"outcome": "selected", "optionId": "allow_once"}
    # The permission request went out after the tool call it is about was announced.
    call_id = edit["request"]["toolCall"]["toolCallId"]
    announced = next(
        i
        for i, r in enumerate(records)
        if r["kind"] == "tool_call" and r["call"]["toolCallId"] == call_id
    )
    assert announced < records.index(edit)


class Waiting:
    """A permission policy that never decides: the turn stays open at its permission."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def decide(self, request: acp.RequestPermissionRequest) -> acp.PermissionOption | None:
        self.asked.set()
        await asyncio.Event().wait()
        return None


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


async def gone(pids: list[int], seconds: float = 20) -> list[int]:
    """The pids still alive (not zombies) after waiting up to `seconds` for them to go."""

    def alive(pid: int) -> bool:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in status

    async with asyncio.timeout(seconds):
        while any(alive(pid) for pid in pids):
            await asyncio.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.parametrize(("victim", "named"), [(0, "proxy 0"), (1, "proxy 1"), (2, "the agent")])
async def test_killing_a_component_mid_turn_ends_the_chain_with_a_clear_error(
    project: Path, victim: int, named: str
) -> None:
    policy = Waiting()
    runtime = ClientRuntime(permission_policy=policy)
    async with spawn_agent(conduct(RULES, AUDIT), runtime, cwd=str(project)) as conn:
        conductor = conn.connection.transport.pid  # type: ignore[attr-defined]
        await runtime.initialize()
        sid = (await runtime.new_session(str(project))).session_id
        turn = asyncio.ensure_future(runtime.prompt(sid, "/run true"))
        await asyncio.wait_for(policy.asked.wait(), 30)
        components = children(conductor)
        assert len(components) == 3
        os.kill(components[victim], signal.SIGKILL)
        with pytest.raises(RequestError) as failed:
            await asyncio.wait_for(turn, 30)
        assert "the proxy chain ended" in failed.value.message
        assert named in failed.value.message and "SIGKILL" in failed.value.message
        assert await gone([conductor, *components]) == []


async def test_killing_the_conductor_leaves_no_component_running(project: Path) -> None:
    runtime = ClientRuntime(permission_policy=Waiting())
    async with spawn_agent(conduct(RULES, AUDIT), runtime, cwd=str(project)) as conn:
        conductor = conn.connection.transport.pid  # type: ignore[attr-defined]
        await runtime.initialize()
        components = children(conductor)
        assert len(components) == 3
        os.kill(conductor, signal.SIGKILL)
        assert await gone(components) == []


def test_record_keeps_each_hops_traffic_in_its_own_recording(project: Path) -> None:
    hops = project / "hops"
    chain = [*ACPSTACK, "conduct", "--record", str(hops), "--proxy", RULES, "--", *AGENT]
    done = subprocess.run(
        [*ACPSTACK, "chat", "-p", "/help", "--", *chain],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in hops.iterdir()) == ["0-proxy.jsonl", "1-agent.jsonl"]

    def sent_to(name: str) -> list[dict[str, Any]]:
        """The requests and notifications the conductor sent this component."""
        records = [json.loads(line) for line in (hops / name).read_text().splitlines()[1:]]
        return [
            r["message"]
            for r in records
            if r["from"] == "client" and "method" in r.get("message", {})
        ]

    to_proxy, to_agent = sent_to("0-proxy.jsonl"), sent_to("1-agent.jsonl")
    assert [m["method"] for m in to_proxy][:2] == ["proxy/initialize", "session/new"]
    assert [m["method"] for m in to_agent][:2] == ["initialize", "session/new"]
    # The rules proxy's addition is in what the agent got, not in what the proxy got.
    prompt_in = next(m for m in to_proxy if m["method"] == "session/prompt")
    prompt_out = next(m for m in to_agent if m["method"] == "session/prompt")
    assert len(prompt_in["params"]["prompt"]) == 1
    assert "Project rules" in prompt_out["params"]["prompt"][-1]["text"]

    # One view of both hops: the prompt as it travelled, hop by hop, in time order.
    shown = subprocess.run(
        [*ACPSTACK, "inspect", "--hops", str(hops), "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    view = [json.loads(line) for line in shown.stdout.splitlines()]
    assert {(r["hop"], r["component"]) for r in view} == {(0, "proxy 0"), (1, "agent")}
    assert [r["ts"] for r in view] == sorted(r["ts"] for r in view)

    def travel(method: str) -> list[tuple[int, str]]:
        steps = []
        for r in view:
            message = r.get("message", {})
            inner = message.get("params", {}).get("method")
            if method in (message.get("method"), inner if message.get("method") else None):
                steps.append((r["hop"], r["from"]))
        return steps

    assert travel("session/prompt")[:3] == [(0, "client"), (0, "agent"), (1, "client")]
    table = subprocess.run(
        [*ACPSTACK, "inspect", "--hops", str(hops)], capture_output=True, text=True, timeout=30
    )
    assert table.returncode == 0, table.stderr
    assert "proxy 0 → conductor  request #" in table.stdout
    assert "proxy/successor ⟨session/prompt⟩" in table.stdout


def test_conduct_without_components_is_a_usage_error() -> None:
    done = subprocess.run([*ACPSTACK, "conduct"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "give at least one --proxy or an agent command" in done.stderr


def test_conduct_says_which_component_cannot_start() -> None:
    done = subprocess.run(
        [*ACPSTACK, "conduct", "--proxy", "/nonexistent/proxy", "--", *AGENT],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "cannot start proxy 0 (`/nonexistent/proxy`)" in done.stderr


async def test_a_chain_passes_the_agent_checks_it_once_failed(project: Path) -> None:
    # Through a proxy whose update hook awaits (the audit example), answers used to overtake
    # the updates before them; lines of other shapes got the wrong error codes.
    from acpstack.conformance import Verdict

    verdicts = await check_chain(project, conduct(RULES, AUDIT))
    assert verdicts == dict.fromkeys(CHECKS, Verdict.PASS)
