"""Tokens and principals on `acpstack serve` (real processes, real sockets on 127.0.0.1):
a token is always asked for (one is made when none is given), `--no-token` warns, and with
`--token-file` each principal sees and drives only its own sessions, on one server and
across two servers that share a PostgreSQL store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from _probe import INIT, EventStream, Probe, prompt, request
from _serving import SCRIPTED, serve_process

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"


async def call(probe: Probe, events: EventStream, rid: int, method: str, **params: Any) -> Any:
    """Post a request and read its answer from `events`."""
    assert (await probe.post(request(rid, method, params))).status_code == 202
    return (await events.until(lambda m: m.get("id") == rid))[-1]


async def check_separation(alice_url: str, bob_url: str, workdir: str) -> None:
    alice = Probe(alice_url, {"Authorization": f"Bearer {ALICE}"})
    bob = Probe(bob_url, {"Authorization": f"Bearer {BOB}"})
    try:
        await alice.initialize()
        await bob.initialize()
        async with alice.stream() as events:
            sid = await alice.new_session(events)
        async with alice.stream(sid) as events:
            assert (await alice.post(prompt(2, sid, "/help"))).status_code == 202
            await events.until(lambda m: m.get("id") == 2)
        async with alice.stream() as events:
            mine = await call(alice, events, 3, "session/list")
            assert sid in [s["sessionId"] for s in mine["result"]["sessions"]]
        # Bob knows the id (it leaked somehow): still nothing
        async with bob.stream() as events:
            theirs = await call(bob, events, 1, "session/list")
            assert sid not in [s["sessionId"] for s in theirs["result"]["sessions"]]
            for rid, method in ((2, "session/load"), (3, "session/resume")):
                refused = await call(
                    bob, events, rid, method, sessionId=sid, cwd=workdir, mcpServers=[]
                )
                assert refused["error"]["code"] == -32002, refused
        async with bob.stream(sid) as events:
            assert (await bob.post(prompt(4, sid, "rm -rf ~"))).status_code == 202
            refused = (await events.until(lambda m: m.get("id") == 4))[-1]
            assert refused["error"]["code"] == -32002, refused
        # nor can Bob use Alice's connection: it is unknown to him
        stolen = await bob.post(request(5, "session/list", {}), connection=alice.connection_id)
        assert stolen.status_code == 404
        # and Alice still has it
        async with alice.stream() as events:
            again = await call(
                alice, events, 4, "session/load", sessionId=sid, cwd=workdir, mcpServers=[]
            )
            assert "result" in again, again
    finally:
        await alice.aclose()
        await bob.aclose()


def token_file(tmp_path: Path) -> str:
    path = tmp_path / "tokens"
    path.write_text(f"# principals\nalice {ALICE}\nbob {BOB}  # the other one\n")
    return str(path)


async def test_a_principal_cannot_see_or_drive_anothers_sessions(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions.db")
    with serve_process("--token-file", token_file(tmp_path), "--store", store) as served:
        await check_separation(served.url, served.url, str(tmp_path))


async def test_principals_are_kept_apart_across_servers_sharing_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    tokens = token_file(tmp_path)
    with (
        serve_process("--token-file", tokens, "--store", postgres_url) as one,
        serve_process("--token-file", tokens, "--store", postgres_url) as two,
    ):
        await check_separation(one.url, two.url, str(tmp_path))


async def test_without_a_token_option_one_is_made_and_printed_as_a_url() -> None:
    with serve_process("--agent", SCRIPTED, open_by_default=False) as served:
        printed = served.wait_line(r"(http://\S+/acp)\?token=(\S+)")
        assert "[redacted]" not in printed.group(0)
        async with httpx.AsyncClient(timeout=10) as http:
            refused = await http.post(served.url, json=INIT)
            assert refused.status_code == 401
            assert refused.headers["connection"] == "close"
            answer = await http.post(printed.group(0), json=INIT)  # the URL as printed
            assert answer.status_code == 200, answer.text
            bearer = await http.post(
                served.url, json=INIT, headers={"Authorization": f"Bearer {printed.group(2)}"}
            )
            assert bearer.status_code == 200


async def test_no_token_warns_and_serves_loopback_openly() -> None:
    with serve_process("--agent", SCRIPTED, "--no-token") as served:
        served.wait_line("WARNING: no token")
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.post(served.url, json=INIT)).status_code == 200


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("alice\n", "expected 'NAME TOKEN'"),
        ("# nobody\n", "names no token"),
        ("a t1\nb t1\n", "a token given twice"),
    ],
)
async def test_a_bad_token_file_is_refused(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(content)
    with serve_process("--token-file", str(path), wait=False) as served:
        assert served.proc.wait(timeout=30) == 2
    assert problem in "".join(served.stderr)
