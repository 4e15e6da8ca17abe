"""`acpstack check client`: the agent that exercises a client, run under real clients
(our `acpstack chat`, the official TypeScript SDK's client, and clients written here to
answer a cancelled permission request right and wrong)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acpstack import Client, spawn_agent
from acpstack.schema import v1 as acp
from acpstack.schema import v2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "interop"))
import _foreign  # noqa: E402

CHECK_CLIENT = [sys.executable, "-m", "acpstack", "check", "client"]

pytestmark = pytest.mark.timeout(90, func_only=True)


def findings(report: Path) -> dict[str, str]:
    data = json.loads(report.read_text("utf-8"))
    return {f["id"]: f["verdict"] for f in data["findings"]}


def test_acpstack_chat_passes_the_client_checks(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# workspace\n")
    chat = [sys.executable, "-m", "acpstack", "chat", "--cwd", str(workspace), "-p", "run"]
    done = subprocess.run(
        [*chat, "--approve-all", "--", *CHECK_CLIENT, "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert done.returncode == 0, done.stderr
    verdicts = findings(report)
    assert verdicts.pop("elicitation") == "skip"  # acpstack chat does not offer elicitation
    assert verdicts.pop("negotiation.fallback") == "skip"  # it asked for 1, which it got
    assert set(verdicts.values()) == {"pass"}, verdicts
    for key in ("fs.write-creates", "fs.read-lines", "fs.read-outside", "terminal.byte-limit"):
        assert key in verdicts
    assert "| pass | terminal.kill |" in done.stdout  # the report is the agent's message too
    assert sorted(p.name for p in workspace.iterdir()) == ["README.md"]  # cleaned up


class CancellingClient(Client):
    """Cancels the turn while the permission request is pending, then answers it with
    `answer_after_cancel` (`cancelled` is right; anything else is the defect)."""

    def __init__(self, answer_after_cancel: dict[str, Any]) -> None:
        self.answer_after_cancel = answer_after_cancel
        self.session_id = ""
        self.asked = asyncio.Event()
        self.text: list[str] = []

    async def session_update(self, params: acp.SessionNotification) -> None:
        if isinstance(params.update, acp.AgentMessageChunk):
            self.text.append(getattr(params.update.content, "text", ""))

    async def session_request_permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        self.asked.set()
        await self.agent.session_cancel(acp.CancelNotification(session_id=self.session_id))
        response: acp.RequestPermissionResponse = msgspec.convert(
            self.answer_after_cancel, acp.RequestPermissionResponse
        )
        return response


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ({"outcome": {"outcome": "cancelled"}}, "pass"),
        ({"outcome": {"outcome": "selected", "optionId": "allow-once"}}, "fail"),
    ],
)
async def test_cancellation_with_a_pending_permission_request(
    tmp_path: Path, answer: dict[str, Any], verdict: str
) -> None:
    report = tmp_path / "report.json"
    client = CancellingClient(answer)
    async with spawn_agent([*CHECK_CLIENT, "--report", str(report)], client) as conn:
        await conn.agent.initialize()
        new = await conn.agent.session_new(acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[]))
        client.session_id = new.session_id
        prompt = acp.PromptRequest(
            session_id=new.session_id, prompt=[acp.TextContent(text="cancel")]
        )
        done = await asyncio.wait_for(conn.agent.session_prompt(prompt), 30)
    assert done.stop_reason == "cancelled"
    assert findings(report)["permission.cancel"] == verdict
    assert "press your client's stop" in "".join(client.text)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_official_typescript_client(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    agent = [*CHECK_CLIENT, "--report", str(report)]
    command = _foreign.ts_client_cmd(
        agent, "--cwd", str(tmp_path), "--prompt", "run", "--permission", "allow"
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=80)
    assert done.returncode == 0, done.stderr
    verdicts = findings(report)
    # The SDK example client offers files (inside any path it is given) but no terminals.
    assert verdicts["terminal"] == "skip"
    assert verdicts["fs.read"] == "pass" and verdicts["fs.write-creates"] == "pass"
    assert verdicts["permission.answer"] == "pass"
    assert verdicts["schema.client-messages"] == "pass"


# -- version negotiation ------------------------------------------------------------------


async def test_a_client_that_asks_for_v2_and_goes_on_in_v1(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    client = CancellingClient({"outcome": {"outcome": "cancelled"}})
    async with spawn_agent([*CHECK_CLIENT, "--report", str(report)], client) as conn:
        info = v2.Implementation(name="v2-asking-client", version="1")
        answer = await conn.agent.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        assert answer.protocol_version == 1 and conn.agent.protocol_version == 1
        new = await conn.agent.session_new(acp.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[]))
        client.session_id = new.session_id
        prompt = acp.PromptRequest(
            session_id=new.session_id, prompt=[acp.TextContent(text="cancel")]
        )
        await asyncio.wait_for(conn.agent.session_prompt(prompt), 30)
    data = json.loads(report.read_text("utf-8"))
    assert data["client"]["name"] == "v2-asking-client"  # v2's `info`
    found = {f["id"]: (f["verdict"], f["message"]) for f in data["findings"]}
    assert found["negotiation.version"] == ("pass", "asked for 2")
    assert found["negotiation.initialize-shape"] == ("pass", "v2's InitializeRequest")
    assert found["negotiation.fallback"] == (
        "pass",
        "asked for 2, was answered 1, and went on in v1",
    )


async def test_a_client_that_negotiates_wrongly(tmp_path: Path) -> None:
    # Raw lines: protocolVersion 2 in v1's shape (no `info`), and a v2-only method after
    # the agent answered 1. Every request the agent makes is answered with an error.
    sys.path.insert(0, str(HERE.parent / "v2"))
    from _lines import LineClient

    report = tmp_path / "report.json"
    client = await LineClient.start([*CHECK_CLIENT, "--report", str(report)])
    try:
        init = await client.request("initialize", {"protocolVersion": 2, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        login = await client.request("auth/login", {"methodId": "x"})
        assert login["error"]["code"] == -32601
        new = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "run"}]}
        done = await client.request("session/prompt", prompt, timeout=60)
        assert done["result"]["stopReason"] == "end_turn"
    finally:
        await client.close()
    found = {f["id"]: f for f in json.loads(report.read_text("utf-8"))["findings"]}
    shape = found["negotiation.initialize-shape"]
    assert shape["verdict"] == "fail" and "'info' is a required property" in shape["message"]
    fallback = found["negotiation.fallback"]
    assert fallback["verdict"] == "fail"
    assert fallback["message"] == "asked for 2, was answered 1, then sent v2-only auth/login"
    assert "should disconnect" in fallback["rule"]["text"]


async def test_a_version_that_is_not_a_number(tmp_path: Path) -> None:
    sys.path.insert(0, str(HERE.parent / "v2"))
    from _lines import LineClient

    report = tmp_path / "report.json"
    client = await LineClient.start([*CHECK_CLIENT, "--report", str(report)])
    try:
        await client.request("initialize", {"protocolVersion": "one"})
        new = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = {
            "sessionId": new["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "go"}],
        }
        await client.request("session/prompt", prompt, timeout=60)
    finally:
        await client.close()
    found = {f["id"]: f for f in json.loads(report.read_text("utf-8"))["findings"]}
    assert found["negotiation.version"]["verdict"] == "fail"
    assert "negotiation.fallback" not in found


# -- elicitation, and a client sending what only agents send --------------------------------

ELICITING = {"elicitation": {"form": {}, "url": {}}}


def client_answers(form: dict[str, Any], url: dict[str, Any]) -> Any:
    """What a LineClient answers: permission allowed, each elicitation mode as given."""

    def answer(request: dict[str, Any]) -> Any:
        if request["method"] == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": "allow-once"}}
        if request["method"] == "elicitation/create":
            return form if request["params"]["mode"] == "form" else url
        raise LookupError(request["method"])

    return answer


async def run_checks(
    tmp_path: Path, answer: Any, capabilities: dict[str, Any], *early: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Run every check of `check client` with a raw line client that offers `capabilities`,
    answers with `answer` and sends the `early` messages right after initialize; the
    report's findings by id."""
    sys.path.insert(0, str(HERE.parent / "v2"))
    from _lines import LineClient

    report = tmp_path / "report.json"
    client = await LineClient.start([*CHECK_CLIENT, "--report", str(report)], answer=answer)
    try:
        init = {"protocolVersion": 1, "clientCapabilities": capabilities}
        await client.request("initialize", init)
        for message in early:
            await client.send(message)
        new = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "run"}]}
        done = await client.request("session/prompt", prompt, timeout=60)
        assert done["result"]["stopReason"] == "end_turn"
    finally:
        await client.close()
    return {f["id"]: f for f in json.loads(report.read_text("utf-8"))["findings"]}


GOOD_FORM = {"action": "accept", "content": {"name": "Ada", "count": 3, "ok": True}}


@pytest.mark.parametrize(
    ("form", "url", "verdicts"),
    [
        (GOOD_FORM, {"action": "accept"}, ("pass", "pass")),
        ({"action": "decline"}, {"action": "cancel"}, ("pass", "pass")),
        # the form's content breaks its requestedSchema; the url answer is no action
        ({"action": "accept", "content": {"count": 9}}, {"action": "maybe"}, ("fail", "fail")),
    ],
)
async def test_elicitation_in_both_modes(
    tmp_path: Path, form: dict[str, Any], url: dict[str, Any], verdicts: tuple[str, str]
) -> None:
    found = await run_checks(tmp_path, client_answers(form, url), ELICITING)
    assert (found["elicitation.form"]["verdict"], found["elicitation.url"]["verdict"]) == verdicts
    assert "elicitation" not in found  # (the finding of a client without elicitation)
    if verdicts[0] == "fail":
        assert found["elicitation.form"]["message"] == (
            "name (required) is not a string; count 9 is not an integer from 1 to 5"
        )
        # (an unknown action is valid JSON Schema-wise: the schema leaves the enum open)
        assert found["elicitation.url"]["message"].startswith("action 'maybe'")
    else:
        assert found["schema.client-messages"]["verdict"] == "pass"


async def test_elicitation_only_in_the_advertised_mode(tmp_path: Path) -> None:
    url_only = {"elicitation": {"url": {}}}
    found = await run_checks(tmp_path, client_answers(GOOD_FORM, {"action": "decline"}), url_only)
    assert found["elicitation.url"]["verdict"] == "pass"
    assert "elicitation.form" not in found
    found = await run_checks(tmp_path, client_answers(GOOD_FORM, {"action": "decline"}), {})
    assert found["elicitation"]["verdict"] == "skip"
    assert "elicitation.form" not in found and "elicitation.url" not in found


async def test_a_client_that_sends_an_agents_method_fails_the_schema_check(
    tmp_path: Path,
) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    misdirected = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": update},
    }
    found = await run_checks(tmp_path, client_answers(GOOD_FORM, {}), {}, misdirected)
    schema = found["schema.client-messages"]
    assert schema["verdict"] == "fail"
    assert schema["message"].startswith(
        "session/update at $.method: `session/update` is sent by the agent to the client, "
        "never the other way round: a client must not send it"
    )
