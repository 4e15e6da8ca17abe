"""The scripted model server of fake_models.py, over a real socket: what claude-agent-acp
and gemini-cli get from it (tests/proxy/test_hosted_agents.py), checked without them."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_models import FakeModels  # noqa: E402

pytestmark = pytest.mark.timeout(60)

BASH = {"name": "Bash", "input_schema": {"type": "object"}}


@pytest.fixture
def models() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


def post(models: FakeModels, path: str, body: bytes | dict[str, Any]) -> tuple[str, str]:
    """POST; the content type and the body of the answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(models.url + path, data=data, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.headers["Content-Type"], answer.read().decode()


def sse(text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """The (event, data) pairs of an SSE body."""
    events = []
    for chunk in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields.get("event"), json.loads(fields["data"])))
    return events


def test_anthropic_stream_calls_the_bash_tool_then_answers_its_result(
    models: FakeModels,
) -> None:
    ask = {"role": "user", "content": [{"type": "text", "text": "RUN: touch x"}]}
    kind, body = post(models, "/v1/messages", {"stream": True, "tools": [BASH], "messages": [ask]})
    assert kind == "text/event-stream"
    events = sse(body)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    block = events[1][1]["content_block"]
    assert (block["type"], block["name"]) == ("tool_use", "Bash")
    assert json.loads(events[2][1]["delta"]["partial_json"])["command"] == "touch x"
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"

    result = {"type": "tool_result", "tool_use_id": block["id"], "content": "done"}
    again = {"messages": [ask, {"role": "user", "content": [result]}], "tools": [BASH]}
    _, body = post(models, "/v1/messages?beta=true", again)  # not streamed: plain JSON
    assert json.loads(body)["content"] == [{"type": "text", "text": "tool said: done"}]
    assert len(models.model_calls()) == 2 and models.received("RUN: touch x")


def test_anthropic_without_a_shell_tool_echoes(models: FakeModels) -> None:
    _, body = post(models, "/v1/messages", {"messages": [{"role": "user", "content": "RUN: x"}]})
    assert json.loads(body)["content"][0]["text"] == "echo: RUN: x"


def test_gemini_function_call_and_structured_side_call(models: FakeModels) -> None:
    shell = {"functionDeclarations": [{"name": "run_shell_command"}]}
    ask = {"role": "user", "parts": [{"text": "RUN: touch x"}]}
    path = "/v1beta/models/m:streamGenerateContent?alt=sse"
    _, body = post(models, path, {"contents": [ask], "tools": [shell]})
    [(_, answer)] = sse(body)
    call = answer["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call["name"] == "run_shell_command" and call["args"]["command"] == "touch x"

    schema = {"type": "OBJECT", "properties": {"score": {"type": "INTEGER"}}}
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    _, body = post(
        models, "/v1beta/models/m:generateContent", {"contents": [ask], "generationConfig": config}
    )
    text = json.loads(body)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"score": 1}


def test_bad_requests_get_an_answer_and_are_logged(models: FakeModels) -> None:
    with pytest.raises(urllib.error.HTTPError) as bad:
        post(models, "/v1/messages", b"{not json")
    with bad.value as error:
        assert error.code == 400 and b"not JSON" in error.read()
    assert post(models, "/somewhere/else", {"x": 1})[1] == "{}"
    assert [r["path"] for r in models.requests] == ["/v1/messages", "/somewhere/else"]
    assert models.requests[0]["body"] == {"undecodable": "{not json"}
    assert models.model_calls()[0]["path"] == "/v1/messages"
