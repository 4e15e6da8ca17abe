"""The live page of `acpstack inspect --web`, loaded in headless Chromium (Debian's
`chromium` package; .ci/run installs it) while a real client/agent session runs through the
proxy, and its HTTP endpoints probed directly (token, Host check, events, SSE)."""

from __future__ import annotations

import http.client
import json
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE.parent / "conformance" / "peers" / "raw_agent.py")]
XSS = '<img src=x onerror="document.title=1">'
TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{SPAN_ID}-01"  # an editor's trace, carried in the prompt's _meta

pytestmark = pytest.mark.timeout(60)


class Live:
    """`acpstack inspect --web` with this test as its client (line by line)."""

    def __init__(self, record: Path) -> None:
        argv = [
            sys.executable,
            "-m",
            "acpstack",
            "inspect",
            "--web",
            "--record",
            str(record),
            "--",
            *AGENT,
        ]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.stderr: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()
        self.url = self._wait_url()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.put(line)

    def _wait_url(self) -> str:
        while True:
            line = self.stderr.get(timeout=20).decode()
            found = re.search(r"live page: (http://\S+)", line)
            if found:
                return found.group(1)

    def call(self, rid: int, method: str, params: dict[str, Any], replies: int = 1) -> list[Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return [json.loads(self.proc.stdout.readline()) for _ in range(replies)]

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=20)
        self.reader.join(timeout=10)
        self.proc.stdout.close()
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    session = Live(tmp_path / "rec.ndjson")
    try:
        session.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = session.call(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new[0]["result"]["sessionId"]
        session.call(3, "session/new", {"cwd": 5, "mcpServers": []})  # invalid: error + violation
        prompt = [{"type": "text", "text": f"hello {XSS}"}]
        traced = {"sessionId": sid, "prompt": prompt, "_meta": {"traceparent": TRACEPARENT}}
        session.call(4, "session/prompt", traced, replies=2)
        session.call(5, "_acpstack/unknown", {})  # -32601
        yield session
    finally:
        assert session.close() == 0


def get(url: str, path: str, host: str | None = None) -> tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    conn.request("GET", path, headers={"Host": host} if host else {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def dump_dom(url: str) -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(
            "chromium is not installed (.ci/run installs Debian's `chromium`; apt-get failed or is unavailable here)"
        )
    with tempfile.TemporaryDirectory() as profile:
        argv = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=45)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_page_shows_the_timeline_pairs_errors_violations_and_conversation(live: Live) -> None:
    dom = dump_dom(live.url)
    rows = re.findall(r'<tr class="ev ([^"]+)" data-seq="(\d+)" data-session="([^"]*)"', dom)
    assert len(rows) >= 11
    kinds = [kind for kind, _, _ in rows]
    assert sum("error" in k.split() for k in kinds) == 2  # -32602 and -32601
    assert any("violation" in k.split() for k in kinds)
    assert "$.params.cwd" in dom  # the violation says where
    # requests are paired with their responses: the prompt request shows its latency
    prompt_row = re.search(
        r'<td class="method">session/prompt</td>.*?<td class="lat">([^<]*)</td>', dom
    )
    assert prompt_row is not None and prompt_row.group(1).endswith(" ms")
    assert "stopReason end_turn" in dom
    # the timeline by session: a button per session, rows tagged with their session
    sessions = {session for _, _, session in rows}
    assert "connection" in sessions and len(sessions) == 2
    assert re.search(r'<button[^>]*data-session="[0-9a-f]{32}"', dom)
    # the conversation, rebuilt: the user's prompt and the agent's answer, as text
    assert re.search(
        r'class="turn user"[^>]*><span class="who">user</span><span class="text">hello &lt;img', dom
    )
    assert re.search(r'class="turn agent"[^>]*>.*?echo: hello &lt;img src=x', dom)
    assert "<img src" not in dom  # the agent's text is never markup
    assert "2 errors" in dom
    assert f"trace {TRACE_ID[:8]}" in dom  # the prompt's row shows its trace


def test_the_endpoints_need_the_token_and_a_loopback_host(live: Live) -> None:
    token_path = urlsplit(live.url).path
    # The bare address explains the token, without giving it away.
    status, help_page = get(live.url, "/")
    assert status == 200 and b"secret token" in help_page
    assert token_path.strip("/").encode() not in help_page
    assert get(live.url, "/", host="evil.example:80")[0] == 403
    assert get(live.url, "/not-the-token/")[0] == 404
    assert get(live.url, token_path, host="evil.example:80")[0] == 403
    status, page = get(live.url, token_path)
    assert status == 200 and b"Content-Security-Policy" not in page  # (a header, not content)
    status, body = get(live.url, token_path + "events.json")
    events = json.loads(body)
    assert status == 200 and [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["method"] == "initialize" and events[1]["pair"] == 1


def test_a_message_carrying_a_traceparent_has_its_trace_ids_in_the_events(live: Live) -> None:
    status, body = get(live.url, urlsplit(live.url).path + "events.json")
    traced = [e for e in json.loads(body) if "traceId" in e]
    assert status == 200
    assert [(e["method"], e["kind"]) for e in traced] == [("session/prompt", "request")]
    assert (traced[0]["traceId"], traced[0]["spanId"]) == (TRACE_ID, SPAN_ID)


def test_server_sent_events_resume_after_a_sequence_number(live: Live) -> None:
    parts = urlsplit(live.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    conn.request("GET", parts.path + "events?after=9")
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    first = response.readline() + response.readline()
    assert first.startswith(b"id: 10\ndata: {")
    conn.close()


def test_a_recording_can_be_viewed_later(live: Live, tmp_path: Path) -> None:
    assert live.close() == 0
    viewer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acpstack",
            "inspect",
            "--view",
            str(tmp_path / "rec.ndjson"),
            "--web",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert viewer.stderr is not None
        url = re.search(r"page: (http://\S+)", viewer.stderr.readline())
        assert url is not None
        status, body = get(url.group(1), urlsplit(url.group(1)).path + "events.json")
        assert status == 200 and len(json.loads(body)) >= 11
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
        assert viewer.stderr is not None
        viewer.stderr.close()


def v2_recording(path: Path) -> None:
    """A v2 connection: an echoed prompt, a tool call known from tool_call_update only
    (renamed once), message chunks replaced by the whole message."""
    sid = "v2-session"

    def update(body: dict[str, Any]) -> dict[str, Any]:
        params = {"sessionId": sid, "update": body}
        return {"from": "agent", "message": {"method": "session/update", "params": params}}

    def text(value: str) -> dict[str, str]:
        return {"type": "text", "text": value}

    info = {"name": "t", "version": "1"}
    prompt = {"sessionId": sid, "prompt": [text("hello")]}
    lines = [
        {
            "from": "client",
            "message": {
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": info},
            },
        },
        {
            "from": "agent",
            "message": {
                "id": 0,
                "result": {"protocolVersion": 2, "info": info, "capabilities": {}},
            },
        },
        {"from": "client", "message": {"id": 1, "method": "session/new", "params": {"cwd": "/w"}}},
        {"from": "agent", "message": {"id": 1, "result": {"sessionId": sid}}},
        {"from": "client", "message": {"id": 2, "method": "session/prompt", "params": prompt}},
        update({"sessionUpdate": "user_message", "messageId": "u1", "content": [text("hello")]}),
        update({"sessionUpdate": "state_update", "state": "running"}),
        {"from": "agent", "message": {"id": 2, "result": {"messageId": "u1"}}},
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Edit"}),
        update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Edit a.txt"}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("Do")}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("ne")}),
        update({"sessionUpdate": "agent_message", "messageId": "a1", "content": [text("Done.")]}),
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]
    records = [{"acpstack": "traffic", "version": 1, "started": 1.0}]
    for number, line in enumerate(lines):
        message = {"jsonrpc": "2.0", **line["message"]}
        records.append({"ts": 1.0 + number / 100, "from": line["from"], "message": message})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_v2_recording_is_checked_and_its_conversation_rebuilt(tmp_path: Path) -> None:
    record = tmp_path / "v2.ndjson"
    v2_recording(record)
    viewer = subprocess.Popen(
        [sys.executable, "-m", "acpstack", "inspect", "--view", str(record), "--web"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert viewer.stderr is not None
        url = re.search(r"page: (http://\S+)", viewer.stderr.readline())
        assert url is not None
        dom = dump_dom(url.group(1))
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
        assert viewer.stderr is not None
        viewer.stderr.close()
    assert "14 messages, 0 errors, 0 with violations" in dom
    turns = re.findall(
        r'class="turn (\w+)"[^>]*><span class="who">[^<]*</span><span class="text">([^<]*)<', dom
    )
    assert turns == [("user", "hello"), ("tool", "Edit a.txt"), ("agent", "Done.")]
