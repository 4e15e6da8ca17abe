"""Public signatures that were `Any` are typed: a type checker sees through them. The code
below is checked by mypy, in process, in a directory of its own under .cache/ (a fixed
path: mypy's cache keeps the file name of errors it reuses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

WORK = Path(__file__).resolve().parents[2] / ".cache" / "mypy-typed-api"

USER_CODE = """
from acpstack.agent import SessionStore, Turn

def check(store: SessionStore, turn: Turn) -> None:
    store.update("s", titel="typo")
    store.update("s", archived="yes")
    store.update("s", title=None, archived=True, additional_directories=("/a",), meta={})
    reveal_type(turn.client)
"""

REQUEST_CODE = """
from acpstack.rpc import Connection
from acpstack.schema import v1, v1_nes, v1_unstable, v2

async def check(conn: Connection, name: str, either: v1.NewSessionRequest | v2.NewSessionRequest) -> None:
    reveal_type(await conn.request("session/new", v1.NewSessionRequest(cwd="/", mcp_servers=[])))
    reveal_type(await conn.request("session/new", v1_unstable.NewSessionRequest(cwd="/", mcp_servers=[])))
    reveal_type(await conn.request("session/new", v2.NewSessionRequest(cwd="/")))
    reveal_type(await conn.request("session/new", either))
    reveal_type(await conn.request("session/fork", v1_unstable.ForkSessionRequest(session_id="s", cwd="/")))
    reveal_type(await conn.request("nes/start", v1_nes.StartNesRequest(), timeout=5))
    await conn.request("session/new", v1.PromptRequest(session_id="s", prompt=[]))  # WRONG
    await conn.request("session/new", {"cwd": "/", "mcpServers": []})  # WRONG
    await conn.request("session/cancel", v1.CancelNotification(session_id="s"))  # WRONG
    reveal_type(await conn.request("_acme/ping", {"n": 1}))
    reveal_type(await conn.request(name, v1.PromptRequest(session_id="s", prompt=[])))
"""


def mypy_messages(name: str, code: str) -> tuple[str, list[tuple[int, str]]]:
    """mypy --strict's output on `code` and its (line, message) pairs."""
    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / f"{name}.py"
    source.write_text(code)
    out, err, _ = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(WORK / "cache"),
            str(source),
        ]
    )
    assert err == ""
    # (mypy names the file relative to the working directory)
    found = re.findall(rf"{name}\.py:(\d+): (.*)", out)
    return out, [(int(line), message) for line, message in found]


def test_store_update_and_turn_client_are_typed() -> None:
    out, found = mypy_messages("user_code", USER_CODE)
    messages = [message for _, message in found]
    # A misspelt field and a wrong value type are caught; the valid call passes.
    assert any('Unexpected keyword argument "titel"' in m for m in messages), out
    assert any('Argument "archived"' in m and '"bool"' in m for m in messages), out
    valid = 1 + next(i for i, line in enumerate(USER_CODE.splitlines()) if "title=None" in line)
    assert valid not in [line for line, _ in found], out
    assert 'note: Revealed type is "acpstack.agent._agent.ClientPeer"' in messages, out


def test_connection_request_is_typed_by_method_and_params() -> None:
    out, found = mypy_messages("request_code", REQUEST_CODE)
    lines = REQUEST_CODE.splitlines()
    revealed = [m.split('"')[1] for _, m in found if "Revealed type" in m]
    schema = "acpstack.schema._generated_"
    assert revealed == [
        # v1's params: v1's answer (an unstable subclass of the params matches it too)
        f"{schema}v1.NewSessionResponse",
        f"{schema}v1.NewSessionResponse",
        # the same name with v2's params: v2's answer; either of them: either answer
        f"{schema}v2.NewSessionResponse",
        f"{schema}v1.NewSessionResponse | {schema}v2.NewSessionResponse",
        # a method of the unstable schema only, one of the frozen nes extension
        f"{schema}v1_unstable.ForkSessionResponse",
        f"{schema}v1_nes.StartNesResponse",
        # a `_` extension method, a name known only at run time: untyped
        "Any",
        "Any",
    ], out
    errors = {line: m for line, m in found if ": error:" in f": {m}"}
    wrong = {i + 1 for i, line in enumerate(lines) if line.endswith("# WRONG")}
    assert set(errors) == wrong, out
    for line in wrong:
        assert '"ParamsDoNotMatchMethod"' in errors[line], out
