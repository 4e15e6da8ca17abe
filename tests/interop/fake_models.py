"""A scripted model server on 127.0.0.1 for agents that only talk to hosted models.

claude-agent-acp (Claude Code) and gemini-cli read their API's base URL from the
environment; pointed here, they run offline. The server speaks just enough of two APIs:

* Anthropic Messages: ``POST /v1/messages`` (streamed as SSE when the request asks for it,
  plain JSON otherwise), text and ``tool_use`` blocks;
* Gemini: ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` and
  ``:generateContent``, text and ``functionCall`` parts.

The script, from the newest user message of a request:

* it carries a tool result: answer ``tool said: <the result's text>``;
* it holds ``RUN: <command>``: call the agent's shell tool with that command (the tool is
  found by name in the request's tool list: ``*Bash`` for Claude, ``run_shell_command``
  for Gemini);
* anything else: answer ``echo: <its text>``.

Every request is kept in ``requests`` (method, path, decoded JSON body) so a test can check
what the agent sent, e.g. that a proxy's rules reached the model. Anything else gets ``{}``
and is logged too (all the two agents asked for besides answers, with the variables of
tests/proxy/test_hosted_agents.py, was Claude Code's ``GET /api/hello``); a body that is
not JSON gets a 400.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RUN = re.compile(r"RUN: ([^\n]+)")


class FakeModels:
    """The server; use as a context manager (``with FakeModels() as models: models.url``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(_Handler):
            models = outer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll keeps shutdown() quick.
        serve = functools.partial(self._server.serve_forever, poll_interval=0.05)
        self._thread = threading.Thread(target=serve, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeModels:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def log(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def model_calls(self) -> list[dict[str, Any]]:
        """The requests that asked a model for an answer (Messages or generateContent)."""
        with self._lock:
            return [r for r in self.requests if _asks_a_model(r["path"].split("?")[0])]

    def received(self, text: str) -> bool:
        """Whether some request for an answer held `text` in one of its strings."""
        return any(text in piece for r in self.model_calls() for piece in _strings(r["body"]))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | dict):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def _asks_a_model(route: str) -> bool:
    return route == "/v1/messages" or route.endswith(("GenerateContent", ":generateContent"))


class _Handler(BaseHTTPRequestHandler):
    models: FakeModels
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the tests' output stays clean
        pass

    def do_GET(self) -> None:  # Claude Code's reachability check, GET /api/hello
        self.models.log("GET", self.path, None)
        self._json(200, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            self.models.log(
                "POST", self.path, {"undecodable": raw[:200].decode("utf-8", "replace")}
            )
            self._json(400, {"error": {"type": "invalid_request_error", "message": "not JSON"}})
            return
        self.models.log("POST", self.path, body)
        route = self.path.split("?")[0]
        if route == "/v1/messages" and isinstance(body, dict):
            self._anthropic(body)
        elif route.endswith(":streamGenerateContent") and isinstance(body, dict):
            self._gemini(body, stream=True)
        elif route.endswith(":generateContent") and isinstance(body, dict):
            self._gemini(body, stream=False)
        else:
            self._json(200, {})

    # ------------------------------------------------------------------ Anthropic

    def _anthropic(self, body: dict[str, Any]) -> None:
        # Claude Code may put a system-role message after the user's.
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"] or [{}]
        last = users[-1].get("content")
        blocks = [{"type": "text", "text": last}] if isinstance(last, str) else (last or [])
        result = next((b for b in blocks if b.get("type") == "tool_result"), None)
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        tool = next(
            (t["name"] for t in body.get("tools") or [] if str(t.get("name")).endswith("Bash")),
            None,
        )
        command = RUN.search(text)
        if result is not None:
            reply: dict[str, Any] = {"type": "text", "text": f"tool said: {_flatten(result)}"}
        elif command and tool:
            reply = {
                "type": "tool_use",
                "id": f"toolu_{len(self.models.requests)}",
                "name": tool,
                "input": {"command": command.group(1).strip(), "description": "run it"},
            }
        else:
            reply = {"type": "text", "text": f"echo: {text}"}
        stop = "tool_use" if reply["type"] == "tool_use" else "end_turn"
        message = {
            "id": f"msg_{len(self.models.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 0},
        }
        if not body.get("stream"):
            self._json(200, {**message, "content": [reply], "stop_reason": stop})
            return
        if reply["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": reply["text"]}
        else:
            start = {**reply, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(reply["input"])}
        self._sse(
            [
                ("message_start", {"type": "message_start", "message": message}),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 5},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    # ------------------------------------------------------------------ Gemini

    def _gemini(self, body: dict[str, Any], *, stream: bool) -> None:
        users = [c for c in body.get("contents") or [] if c.get("role") == "user"] or [{}]
        parts = users[-1].get("parts") or []
        result = next((p["functionResponse"] for p in parts if "functionResponse" in p), None)
        text = "".join(p["text"] for p in parts if "text" in p)
        declared = [
            d.get("name")
            for t in body.get("tools") or []
            for d in t.get("functionDeclarations") or []
        ]
        command = RUN.search(text)
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if config.get("responseMimeType") == "application/json":
            # A side call wanting structured output (gemini-cli's model router): any
            # object of the requested shape will do.
            part: dict[str, Any] = {"text": json.dumps(_sample(schema or {"type": "object"}))}
        elif result is not None:
            part = {"text": f"tool said: {_flatten(result.get('response'))}"}
        elif command and "run_shell_command" in declared:
            part = {
                "functionCall": {
                    "name": "run_shell_command",
                    "args": {"command": command.group(1).strip(), "description": "run it"},
                }
            }
        else:
            part = {"text": f"echo: {text}"}
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "fake",
        }
        if stream:
            self._sse([(None, answer)])
        else:
            self._json(200, answer)

    # ------------------------------------------------------------------ plumbing

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        data = b"".join(_sse_event(name, payload) for name, payload in events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sse_event(name: str | None, payload: Any) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


def _sample(schema: dict[str, Any]) -> Any:
    """The simplest value of a JSON schema (Gemini spells types in capitals)."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _sample(sub) for name, sub in props.items()}
    samples: dict[str, Any] = {"string": "", "integer": 1, "number": 1, "boolean": False}
    return samples.get(kind, [])


def _flatten(value: Any) -> str:
    """The text inside a tool result, however the API nests it."""
    return " ".join(_texts(value)).strip()


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in ("text", "content", "output", "stdout") or not isinstance(item, str):
                yield from _texts(item)
