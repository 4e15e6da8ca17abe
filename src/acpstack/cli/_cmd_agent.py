"""`acpstack agent`: the reference agent on stdio (for editors)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from acpstack.cli._args import positive_int


def add_parser(sub: Any) -> None:
    agent = sub.add_parser(
        "agent",
        help="run the reference agent on stdio (for editors)",
        description="The reference ACP agent on stdin/stdout: scripted and offline without "
        "--model, a coding agent on any OpenAI-compatible API with it.",
    )
    agent.add_argument(
        "--model",
        default=os.environ.get("ACPSTACK_MODEL"),
        help="model name (OpenAI-compatible API); none = offline scripted agent",
    )
    agent.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="API base URL (OpenAI, Ollama, vLLM, llama.cpp server)",
    )
    agent.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key"
    )
    agent.add_argument(
        "--context-window",
        type=positive_int,
        default=32_768,
        metavar="TOKENS",
        help="the model's context window; older messages are left out of requests to fit (default 32768)",
    )
    agent.add_argument(
        "--images",
        action="store_true",
        help="the model accepts images (advertised to the client, sent as image parts)",
    )
    agent.add_argument(
        "--unstable", action="store_true", help="also offer ACP's unstable methods (session/fork)"
    )
    agent.add_argument(
        "--store", default=None, help="SQLite file for sessions (default: user data directory)"
    )
    agent.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from acpstack.cli._refagent import run_reference_agent

    return run_reference_agent(
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        store_path=args.store,
        context_window=args.context_window,
        images=args.images,
        unstable=args.unstable,
    )
