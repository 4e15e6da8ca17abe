"""`acpstack chat -- acpstack inspect --web -- AGENT`: the inspector's live page address
(token included) reaches the chat's user; the bare address explains the token."""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.timeout(120, func_only=True)
ACPSTACK = [sys.executable, "-m", "acpstack"]


def test_the_chat_shows_the_inspectors_page_address(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, ACPSTACK_STORE=str(tmp_path / "sessions.db"))
    agent = [*ACPSTACK, "inspect", "--web", "--", *ACPSTACK, "agent"]
    result = subprocess.run(
        [*ACPSTACK, "chat", "-p", "what is ACP?", "--approve-all", "--", *agent],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    found = re.search(
        r"acpstack inspect: live page: (http://127\.0\.0\.1:\d+/[\w-]+/)", result.stderr
    )
    assert found, result.stderr
    # The page was served by the inspector, which ended with the chat.
    assert urlsplit(found.group(1)).port


def test_the_bare_address_explains_the_token() -> None:
    proc = subprocess.Popen(
        [*ACPSTACK, "inspect", "--web", "--", sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:
            found = re.search(r"live page: (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        parts = urlsplit(url)
        conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=10)
        conn.request("GET", "/")
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        assert response.status == 200
        assert "secret token" in body and "acpstack inspect: live page:" in body
        assert parts.path.strip("/") not in body
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
