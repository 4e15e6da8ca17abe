"""An OpenAI-compatible chat-completions brain: a real coding-agent loop over ACP.

Works with any server speaking the chat-completions API with streaming and tool calls
(OpenAI, Ollama, vLLM, llama.cpp server). The model's tools are in `_llm_tools`, its
stored and trimmed history in `_llm_history`, the prompt's attachments in
`_prompt_content`. A failure of the model server ends the turn with an agent message that
says what went wrong and what to do, and a JSON-RPC error (data `reason: "model_error"`).
Credentials never appear in any of it (`_redact`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

from acpstack.agent import Turn
from acpstack.cli._llm_history import History, fit, request_budget
from acpstack.cli._llm_tools import Toolbox
from acpstack.cli._mcp_tools import mcp_tools
from acpstack.cli._prompt_content import read_prompt
from acpstack.cli._redact import Redactor, redact_url
from acpstack.schema import v1 as acp
from acpstack.wire import INTERNAL_ERROR, RequestError

log = logging.getLogger("acpstack.llm")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONTEXT_WINDOW = 32_768

SYSTEM_PROMPT = (
    "You are a coding agent working in the user's project at {cwd}. Use the tools to read, "
    "search and edit files and to run commands; paths may be relative to that directory. "
    "Make a plan with update_plan for multi-step work. Be concise."
)

FINISH_TO_STOP: dict[str, acp.StopReason] = {"length": "max_tokens", "content_filter": "refusal"}
DETAIL_CHARS = 300


class ModelError(Exception):
    """The model server failed; `kind` names how, `hint` says what the user can do."""

    def __init__(self, kind: str, message: str, hint: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint
        self.status = status


def chat_completions_url(base_url: str) -> str:
    """`<base>/chat/completions`, keeping the base URL's query (some servers take the key there)."""
    parts = urlsplit(base_url)
    return urlunsplit(
        (parts.scheme, parts.netloc, parts.path.rstrip("/") + "/chat/completions", parts.query, "")
    )


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        from acpstack.cli._errors import install_hint

        raise ImportError(f"The LLM backend needs httpx: {install_hint('llm')}") from exc
    return httpx


@dataclass
class Reply:
    """One assistant message as it streams in."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    done: bool = False

    def message(self, *, interrupted: bool = False) -> dict[str, Any]:
        content = "".join(self.text)
        if interrupted:
            return {"role": "assistant", "content": content + "\n[interrupted by the user]"}
        # null content only beside tool calls: some servers reject an assistant message without either
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content or (None if self.calls else ""),
        }
        if self.calls:
            calls = [self.calls[i] for i in sorted(self.calls)]
            for n, call in enumerate(calls, 1):
                call["id"] = call["id"] or f"call_{n}"  # some servers send no ids
            message["tool_calls"] = calls
        return message


class LlmBrain:
    def __init__(
        self,
        *,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        system_prompt: str | None = None,
        max_tool_rounds: int = 20,
        request_timeout: float = 120.0,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        images: bool = False,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.chat_url = chat_completions_url(self.base_url)
        self.shown_url = redact_url(self.base_url)
        # Sent with every request; `providers/set` replaces them (see _llm_providers).
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.enabled = True
        self.api_key_env = api_key_env
        self.redactor = Redactor.for_endpoint(base_url, api_key)
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.max_tool_rounds = max_tool_rounds
        self.request_timeout = request_timeout
        self.context_window = context_window
        self.images = images

    def __repr__(self) -> str:  # never show the key
        return f"LlmBrain(model={self.model!r}, base_url={self.shown_url!r})"

    def route(self, base_url: str, headers: dict[str, str]) -> None:
        """Send the next requests to `base_url` with exactly `headers` (and enable it)."""
        self.base_url = base_url.rstrip("/")
        self.chat_url = chat_completions_url(self.base_url)
        self.shown_url = redact_url(self.base_url)
        self.headers = dict(headers)
        self.enabled = True

    async def respond(self, turn: Turn) -> acp.StopReason:
        history = await History.of(turn.session)
        content, _attachments = await read_prompt(turn, images=self.images)
        history.append({"role": "user", "content": content})
        tools = Toolbox(await mcp_tools(turn.session), redact=self.redactor.values)
        for _ in range(self.max_tool_rounds):
            # Each step's messages are stored before the model is asked again: a session
            # continued after a crash carries on from the last finished step.
            await turn.session.flush()
            reply = Reply()
            try:
                await self._complete(turn, history, tools, reply)
            except ModelError as exc:
                await self._fail(turn, exc)
            except asyncio.CancelledError:
                if reply.text:  # what the user saw stays in the conversation
                    history.append(reply.message(interrupted=True))
                raise
            message = reply.message()
            history.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return FINISH_TO_STOP.get(reply.finish or "", "end_turn")
            for call in calls:
                result = await tools.run(turn, call)
                history.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return "max_turn_requests"

    async def _fail(self, turn: Turn, exc: ModelError) -> NoReturn:
        """Tell the user what went wrong and what to do, then end the turn with an error."""
        message = exc.message.rstrip()
        text = self.redactor.text(f"{message}{'' if message.endswith('.') else '.'} {exc.hint}")
        log.warning("model request failed (%s): %s", exc.kind, text)
        await turn.say(f"\n\n**The model could not answer:** {text}\n")
        data: dict[str, Any] = {"reason": "model_error", "kind": exc.kind}
        if exc.status is not None:
            data["status"] = exc.status
        raise RequestError(INTERNAL_ERROR, f"Model error: {text}", data)

    # -- one streamed completion ----------------------------------------------------------

    def system_message(self, turn: Turn) -> dict[str, Any]:
        """The agent's instructions, then the client's (`systemPrompt`, append mode)."""
        content = self.system_prompt.format(cwd=turn.session.cwd)
        extra = turn.session.system_prompt
        if extra is not None and extra.get("mode") == "append" and extra.get("text"):
            content += "\n\n" + extra["text"]
        return {"role": "system", "content": content}

    async def _complete(self, turn: Turn, history: History, tools: Toolbox, reply: Reply) -> None:
        if not self.enabled:
            raise ModelError(
                "disabled",
                "The model provider is disabled (the client turned it off with providers/disable).",
                "Configure it again with providers/set.",
            )
        httpx = _httpx()
        system = self.system_message(turn)
        messages = fit(
            system, history.messages, request_budget(self.context_window, tools.definitions)
        )
        body = {
            "model": self.model,
            "messages": messages,
            "tools": tools.definitions,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        try:
            async with httpx.AsyncClient(timeout=self.request_timeout) as http:
                async with http.stream(
                    "POST", self.chat_url, json=body, headers=self.headers
                ) as response:
                    if response.status_code >= 400:
                        raise self._http_error(response.status_code, await response.aread())
                    content_type = response.headers.get("content-type", "")
                    if "json" in content_type:  # a server that ignored "stream": one whole answer
                        await self._apply_whole(turn, await response.aread(), reply)
                    elif "event-stream" not in content_type:
                        raise self._bad_response(
                            (await response.aread())[:DETAIL_CHARS].decode("utf-8", "replace")
                        )
                    else:
                        await self._read_stream(turn, response, reply)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise ModelError(
                "unreachable",
                f"Could not connect to the model server at {self.shown_url} ({self._reason(exc)}).",
                "Check that the server is running and that --base-url is right.",
            ) from None
        except httpx.TimeoutException:
            raise ModelError(
                "timeout",
                f"The model server at {self.shown_url} did not answer within {self.request_timeout:g} s.",
                "Try again; a slow local model may need a smaller prompt.",
            ) from None
        except httpx.HTTPError as exc:
            raise self._disconnected(self._reason(exc)) from None
        if not reply.done and reply.finish is None:
            raise self._disconnected("the stream ended early")

    async def _read_stream(self, turn: Turn, response: Any, reply: Reply) -> None:
        async for line in response.aiter_lines():
            if not line.strip() or line.startswith((":", "event:", "id:", "retry:")):
                continue
            if not line.startswith("data:"):
                raise self._bad_response(line)
            data = line[5:].strip()
            if data == "[DONE]":
                reply.done = True
                return
            try:
                chunk = json.loads(data)
            except ValueError:
                raise self._bad_response(data) from None
            if not isinstance(chunk, dict):
                raise self._bad_response(data)
            if "error" in chunk:  # some servers report a failure inside the stream
                raise ModelError(
                    "server_error",
                    f"The model server reported an error: {self._detail(json.dumps(chunk['error']))}",
                    "Try again; if it persists, check the server's log.",
                )
            await self._apply_chunk(turn, chunk, reply)

    async def _apply_whole(self, turn: Turn, body: bytes, reply: Reply) -> None:
        try:
            data = json.loads(body)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise self._bad_response(body[:DETAIL_CHARS].decode("utf-8", "replace")) from None
        if message.get("content"):
            reply.text.append(str(message["content"]))
            await turn.say(str(message["content"]))
        for index, call in enumerate(message.get("tool_calls") or []):
            reply.calls[index] = {
                "id": call.get("id") or "",
                "type": "function",
                "function": dict(call.get("function") or {}),
            }
        reply.finish = data["choices"][0].get("finish_reason") or "stop"
        reply.done = True

    async def _apply_chunk(self, turn: Turn, chunk: dict[str, Any], reply: Reply) -> None:
        usage = chunk.get("usage")
        if isinstance(usage, dict) and "prompt_tokens" in usage:
            used = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
            await turn.usage(used, self.context_window)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                await turn.think(reasoning)
            if delta.get("content"):
                reply.text.append(delta["content"])
                await turn.say(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                slot = reply.calls.setdefault(
                    fragment.get("index", 0),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = fragment.get("id") or slot["id"]
                function = fragment.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            reply.finish = choice.get("finish_reason") or reply.finish

    # -- errors ---------------------------------------------------------------------------

    def _detail(self, text: str) -> str:
        return self.redactor.text(" ".join(text.split())[:DETAIL_CHARS])

    def _reason(self, exc: BaseException) -> str:
        return self._detail(str(exc) or type(exc).__name__)

    def _http_error(self, status: int, body: bytes) -> ModelError:
        raw = body.decode("utf-8", "replace")
        try:
            error = json.loads(raw).get("error")
            raw = str(error.get("message") if isinstance(error, dict) else error or raw)
        except (ValueError, AttributeError):
            pass
        message = f"The model server answered HTTP {status}: {self._detail(raw) or '(no details)'}"
        if status in (401, 403):
            return ModelError(
                "unauthorized",
                message,
                f"Check the API key (the {self.api_key_env} variable, or the credentials in --base-url).",
                status,
            )
        if status == 404:
            return ModelError(
                "not_found",
                message,
                f"Check the model name (--model {self.model}) and --base-url (it usually ends in /v1).",
                status,
            )
        if status == 429:
            return ModelError(
                "rate_limited",
                message,
                "The server is rate limiting or out of quota: wait and try again.",
                status,
            )
        if status >= 500:
            return ModelError(
                "server_error",
                message,
                "The model server failed: try again later, or check its log.",
                status,
            )
        return ModelError(
            "bad_request",
            message,
            "Check --model and --base-url; if the conversation is too long, lower --context-window.",
            status,
        )

    def _bad_response(self, sample: str) -> ModelError:
        return ModelError(
            "bad_response",
            f"The model server's answer is not an OpenAI-compatible chat-completions stream: {self._detail(sample)!r}",
            "Check that --base-url points at an OpenAI-compatible API (it usually ends in /v1).",
        )

    def _disconnected(self, reason: str) -> ModelError:
        return ModelError(
            "disconnected",
            f"The connection to the model server at {self.shown_url} broke in the middle of the answer ({reason}).",
            "Try again.",
        )
