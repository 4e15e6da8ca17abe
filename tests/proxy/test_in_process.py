"""Python proxies run inside the conductor's process (`acpstack conduct --proxy-module`):
the same behaviour as the same proxies run as processes, with no process of their own."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acpstack import RequestError, spawn_agent
from acpstack.client import ClientRuntime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _example_chain import CHECKS, chat_turn, check_chain  # noqa: E402
from test_chain import ACPSTACK, AGENT, ROOT, Waiting, children, gone  # noqa: E402

pytestmark = pytest.mark.timeout(90)

RULES = str(ROOT / "examples" / "proxies" / "rules.py")
AUDIT = str(ROOT / "examples" / "proxies" / "audit.py")
AUDIT_PROCESS = f"{sys.executable} {AUDIT}"


def conduct(*components: str) -> list[str]:
    """Each component a Python file run in-process, or (with a space) a process's command."""
    options = [f"--proxy={c}" if " " in c else f"--proxy-module={c}" for c in components]
    return [*ACPSTACK, "conduct", *options, "--", *AGENT]


@pytest.mark.parametrize("audit", [AUDIT, AUDIT_PROCESS], ids=["in-process", "mixed"])
def test_a_turn_through_in_process_rules_and_audit_reaches_the_agent_and_is_audited(
    project: Path, audit: str
) -> None:
    records = chat_turn(project, conduct(RULES, audit))
    kinds = [record["kind"] for record in records]
    assert "tool_call" in kinds and "command" in kinds and "permission" in kinds


async def test_in_process_proxies_have_no_process_and_a_cancel_ends_the_turn(
    project: Path,
) -> None:
    policy = Waiting()
    runtime = ClientRuntime(permission_policy=policy)
    async with spawn_agent(conduct(RULES, AUDIT), runtime, cwd=str(project)) as conn:
        conductor = conn.connection.transport.pid  # type: ignore[attr-defined]
        await runtime.initialize()
        assert len(children(conductor)) == 1  # the agent only
        sid = (await runtime.new_session(str(project))).session_id
        turn = asyncio.ensure_future(runtime.prompt(sid, "/run true"))
        await asyncio.wait_for(policy.asked.wait(), 30)
        await runtime.cancel(sid)
        answer = await asyncio.wait_for(turn, 30)
        assert answer.stop_reason == "cancelled"


CRASHING = """
    import asyncio
    import contextlib

    from acpstack.proxy import Proxy


    class Crashing(Proxy):
        async def prompt(self, params):
            self.crash.set()
            await asyncio.Event().wait()  # the turn stays open until the crash

        async def serve(self, transport):
            self.crash = asyncio.Event()
            serving = asyncio.ensure_future(super().serve(transport))
            await self.crash.wait()
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
            raise RuntimeError("out of rules")
"""


async def test_an_in_process_proxy_that_raises_ends_the_chain_with_a_clear_error(
    project: Path,
) -> None:
    crashing = project / "crashing.py"
    crashing.write_text(textwrap.dedent(CRASHING))
    runtime = ClientRuntime(permission_policy=Waiting())
    async with spawn_agent(conduct(str(crashing)), runtime, cwd=str(project)) as conn:
        conductor = conn.connection.transport.pid  # type: ignore[attr-defined]
        await runtime.initialize()
        agent = children(conductor)
        assert len(agent) == 1
        sid = (await runtime.new_session(str(project))).session_id
        with pytest.raises(RequestError) as failed:
            await asyncio.wait_for(runtime.prompt(sid, "hello"), 30)
        message = failed.value.message
        assert "the proxy chain ended" in message
        assert "proxy 0 (`Crashing, in-process`)" in message
        assert "RuntimeError: out of rules" in message
        assert await gone([conductor, *agent]) == []


@pytest.mark.parametrize(
    ("source", "spec", "says"),
    [
        (None, "missing.py", "no proxy file"),
        ("x = 1\n", "p.py", "defines 0 Proxy subclasses"),
        ("from acpstack.proxy import Proxy\nclass A(Proxy): pass\n", "p.py:B", "named 'B'"),
        ("raise ValueError('bad config')\n", "p.py", "ValueError: bad config"),
    ],
)
def test_a_proxy_module_that_cannot_load_is_a_usage_error(
    tmp_path: Path, source: str | None, spec: str, says: str
) -> None:
    if source is not None:
        (tmp_path / "p.py").write_text(source)
    done = subprocess.run(
        [*ACPSTACK, "conduct", f"--proxy-module={spec}", "--", *AGENT],
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "--proxy-module:" in done.stderr and says in done.stderr


async def test_in_process_chain_passes_the_agent_checks(project: Path) -> None:
    from acpstack.conformance import Verdict

    verdicts = await check_chain(project, conduct(RULES, AUDIT))
    assert verdicts == dict.fromkeys(CHECKS, Verdict.PASS)
