"""Which call style an agent's handler gets is decided once per handler function (the
decision is cached: inspecting signatures on every request cost half a round trip), and
still per function: a handler replaced at run time gets the style its own signature asks for."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import Client, text_block
from acp.core import AgentSideConnection, ClientSideConnection
from acp.schema import PromptRequest, PromptResponse

from acpstack.transports import memory_pair


class KeywordAgent:
    """The 0.12 style: the request's fields as keyword arguments."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        self.seen.append(f"fields:{session_id}:{prompt[0].text}")
        return PromptResponse(stop_reason="end_turn")


class WholeRequestAgent:
    """The pre-0.7 style: the request model whole, as `params`."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def prompt(self, params: PromptRequest) -> PromptResponse:
        assert isinstance(params, PromptRequest)
        self.seen.append(f"whole:{params.session_id}:{params.prompt[0].text}")
        return PromptResponse(stop_reason="max_tokens")


class _Quiet(Client):
    """A client that only sends prompts."""


async def _prompts(agent: Any, texts: list[str]) -> list[str]:
    near, far = memory_pair()
    server = AgentSideConnection(agent, far)
    conn = ClientSideConnection(_Quiet(), near)
    try:
        stops = []
        for text in texts:
            answer = await asyncio.wait_for(
                conn.prompt(session_id="s-1", prompt=[text_block(text)]), 10
            )
            stops.append(answer.stop_reason)
        return stops
    finally:
        await conn.close()
        await server.close()


async def test_each_handler_gets_its_own_style_on_every_request() -> None:
    keyword, whole = KeywordAgent(), WholeRequestAgent()
    assert await _prompts(keyword, ["a", "b"]) == ["end_turn", "end_turn"]
    with pytest.warns(DeprecationWarning, match="old style"):
        assert await _prompts(whole, ["c", "d"]) == ["max_tokens", "max_tokens"]
    # and the first class again, after the other's style was decided and kept
    assert await _prompts(keyword, ["e"]) == ["end_turn"]
    assert keyword.seen == ["fields:s-1:a", "fields:s-1:b", "fields:s-1:e"]
    assert whole.seen == ["whole:s-1:c", "whole:s-1:d"]


async def test_a_handler_replaced_at_run_time_is_called_in_its_own_style() -> None:
    agent = KeywordAgent()
    assert await _prompts(agent, ["a"]) == ["end_turn"]
    replacement = WholeRequestAgent()
    agent.prompt = replacement.prompt  # type: ignore[method-assign]
    with pytest.warns(DeprecationWarning, match="old style"):
        assert await _prompts(agent, ["b"]) == ["max_tokens"]
    assert agent.seen == ["fields:s-1:a"]
    assert replacement.seen == ["whole:s-1:b"]
