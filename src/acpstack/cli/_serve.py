"""`acpstack serve`: the reference agent (or any stdio agent, or a Python Agent) as a remote
ACP server on http://HOST:PORT/acp and ws://HOST:PORT/acp.

Safe by default: it binds 127.0.0.1, always asks for a token (none given: it makes one
and prints the URL that carries it, as Jupyter does; `--no-token` serves loopback openly,
with a warning), checks Host and Origin against allowlists, and never logs the token.
`--token-file` lets several principals share the server, each seeing only its sessions. `GET /healthz`
answers load balancers' checks (docs/deployment.md runs several behind HAProxy).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import secrets
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

WILDCARDS = {"0.0.0.0", "::", "[::]", ""}


def add_parser(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve an agent to remote clients (streamable HTTP and WebSocket)",
        description="Serve an agent on http://HOST:PORT/acp and ws://HOST:PORT/acp: the "
        "reference agent, an agent by name (`acpstack agents`), a command after `--`, "
        "or a Python Agent (--agent FILE.py:NAME).",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; others need a token)",
    )
    serve.add_argument(
        "--port", type=int, default=8765, help="port (0 picks a free one; default 8765)"
    )
    serve.add_argument("--token", help="require this token (visible in `ps`: prefer --token-env)")
    serve.add_argument(
        "--token-env", metavar="NAME", help="require the token held in this environment variable"
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help="several principals: lines 'NAME TOKEN' ('#' starts a comment); each one's "
        "sessions are its own",
    )
    serve.add_argument(
        "--no-token",
        action="store_true",
        help="serve without a token (loopback only): any local user or process can drive the agent",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed besides loopback ones ('*' = any)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host header allowed besides loopback names and the bound address",
    )
    serve.add_argument(
        "--tls-cert", metavar="FILE", help="serve https:// and wss:// with this certificate (PEM)"
    )
    serve.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    serve.add_argument(
        "--agent",
        metavar="MODULE:NAME",
        help="serve a Python Agent class or factory in this process (e.g. my_agent.py:MyAgent)",
    )
    serve.add_argument(
        "--unstable",
        action="store_true",
        help="an agent served in this process (the reference agent, --agent) also offers "
        "ACP's unstable methods (fork, titles, archive...); a stdio agent decides for itself",
    )
    _add_limit_options(serve)
    _add_reference_agent_options(serve)
    serve.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log connections (and agents' stderr) to stderr",
    )
    _add_agent_choice(serve)


def _add_limit_options(serve: Any) -> None:
    """Limits, timeouts and what the server reports (logs, traces)."""
    serve.add_argument("--max-connections", type=int, default=1024)
    serve.add_argument("--max-message-size", type=int, default=16 * 1024 * 1024, metavar="BYTES")
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="close connections nobody listens to after this long (the detach timeout: how "
        "long a client whose connection broke has to resume it, its turns running; default 600)",
    )
    serve.add_argument(
        "--sessionless-idle-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="close connections that never opened a session, with nobody listening, after "
        "this long (default 30)",
    )
    serve.add_argument(
        "--drain-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM: how long running turns get to finish (default 30)",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per line on stderr, for log collectors",
    )
    serve.add_argument(
        "--otel",
        action="store_true",
        help="OpenTelemetry spans for requests and turns (the otel extra; configure the SDK "
        "and exporter with OTEL_* variables, e.g. under opentelemetry-instrument)",
    )


def _add_reference_agent_options(serve: Any) -> None:
    """The options of the reference agent, when it is the agent served."""
    serve.add_argument(
        "--model",
        default=os.environ.get("ACPSTACK_MODEL"),
        help="reference agent: model name (none = scripted offline agent)",
    )
    serve.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="reference agent: OpenAI-compatible API base URL",
    )
    serve.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="reference agent: environment variable holding the API key",
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="PATH|URL",
        help="reference agent: where sessions live, an SQLite file or a postgresql:// URL "
        "shared by several servers (default: $ACPSTACK_STORE, else the user data directory)",
    )


def _add_agent_choice(serve: argparse.ArgumentParser) -> None:
    from acpstack.cli._args import with_agent_command

    serve.add_argument(
        "agent_name", nargs="?", metavar="AGENT", help="an agent by name (profile or registry id)"
    )
    with_agent_command(serve, "a stdio agent's command line, one process per connection")
    serve.set_defaults(run=lambda args: run_serve(args, args.agent_command))


def run_serve(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    from acpstack.cli._refagent import ConfigError
    from acpstack.server import is_loopback
    from acpstack.transports import MissingExtraError, require_extra

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s: %(message)s",
    )
    if args.log_format == "json":
        from acpstack.cli._jsonlog import JsonFormatter

        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())
    if args.otel:
        try:
            from acpstack.rpc import enable_tracing

            enable_tracing()
        except ImportError:
            sys.stderr.write('acpstack serve: --otel needs OpenTelemetry: pip install ".[otel]"\n')
            return 2
    token, problem = _token(args)
    principals, file_problem = _token_file(args.token_file)
    problem = problem or file_problem
    if problem is None and args.no_token and (token or principals):
        problem = "--no-token goes with no other token option"
    if problem is None and args.no_token and not is_loopback(args.host):
        problem = f"refusing to serve on {args.host} without a token: anyone who can reach it could drive the agent (give --token-env NAME)"
    if problem is None and bool(args.tls_cert) != bool(args.tls_key):
        problem = "--tls-cert and --tls-key go together"
    if problem is None and sum(map(bool, (args.agent, agent_command, args.agent_name))) > 1:
        problem = "give one agent: a name, --agent MODULE:NAME, or a command after --"
    if problem is not None:
        sys.stderr.write(f"acpstack serve: {problem}\n")
        return 2
    try:  # before anything opens a store or loads an agent
        for module in ("uvicorn", "websockets"):
            require_extra(module)
    except MissingExtraError as exc:
        sys.stderr.write(f"acpstack serve: {exc}\n")
        return 2
    hosts = list(args.allow_host) + (["*"] if args.host in WILDCARDS else [args.host])
    stores: list[Any] = []  # the reference agent's, closed on the way out
    if args.agent_name:
        agent_command = _named_agent(args.agent_name)
    try:
        source, what = _agent_source(args, agent_command, stores)
    except (ImportError, AttributeError, OSError) as exc:
        sys.stderr.write(f"acpstack serve: could not load the agent: {exc}\n")
        return 2
    except ConfigError as exc:
        sys.stderr.write(f"acpstack serve: {exc}\n")
        return 2
    try:
        return _serve(args, source, what, token, hosts, _store_answers(stores), principals, stores)
    finally:
        for store in stores:
            store.close()  # a shared store lets other servers take this one's sessions


def _serve(
    args: argparse.Namespace,
    source: Any,
    what: str,
    token: str | None,
    hosts: list[str],
    readiness: Callable[[], bool] | None = None,
    principals: dict[str, str] | None = None,
    stores: list[Any] | None = None,
) -> int:
    from acpstack.server import (
        AgentServer,
        ServerLimits,
        ServerSecurity,
        bind_socket,
        serve_remote,
    )
    from acpstack.transports import MissingExtraError

    generated = None
    if token is None and not principals and not args.no_token:
        token = generated = secrets.token_urlsafe(24)  # as Jupyter does: printed once, below
    app = AgentServer(
        source,
        security=ServerSecurity(
            token=token,
            tokens=principals or {},
            allowed_hosts=hosts,
            allowed_origins=list(args.allow_origin),
        ),
        limits=ServerLimits(
            max_connections=args.max_connections,
            max_message_size=args.max_message_size,
            idle_timeout=args.idle_timeout,
            sessionless_idle_timeout=args.sessionless_idle_timeout,
            drain_timeout=args.drain_timeout,
        ),
        unstable=args.unstable,
        readiness=readiness,
    )
    if stores:  # the reference agent's store feeds /metrics
        _feed_store_metrics(stores[0], app)
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"acpstack serve: cannot listen on {args.host}:{args.port}: {exc}\n")
        return 2
    secure = "s" if args.tls_cert else ""

    def ready(bound: socket.socket) -> None:
        host = args.host if ":" not in args.host.strip("[]") else f"[{args.host.strip('[]')}]"
        port = bound.getsockname()[1]
        sys.stderr.write(
            f"acpstack serve: {what} on http{secure}://{host}:{port}/acp and ws{secure}://{host}:{port}/acp"
            f"{' (token required)' if app.security.required else ''}\n"
        )
        # after the line that says where it listens (scripts read that one first)
        _say_token(args.no_token, generated, f"http{secure}://{host}:{port}/acp")
        sys.stderr.flush()

    from acpstack.rpc import run

    try:
        run(
            serve_remote(
                app,
                sock=sock,
                ssl_certfile=args.tls_cert,
                ssl_keyfile=args.tls_key,
                log_level="info" if args.verbose else "warning",
                on_ready=ready,
            )
        )
    except MissingExtraError as exc:
        sys.stderr.write(f"acpstack serve: {exc}\n")
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def _feed_store_metrics(store: Any, app: Any) -> None:
    """The store's writer reports each batch to /metrics (its latency, what waits)."""
    from acpstack.agent import observe_store_batches

    def batch_committed(seconds: float, waiting: int) -> None:
        app.stats.observe_store_batch(seconds)
        app.stats.store_queue_depth = waiting

    observe_store_batches(store, batch_committed)


def _store_answers(stores: list[Any]) -> Callable[[], bool] | None:
    """`/readyz`'s check: the reference agent's session store answers a query."""
    if not stores:
        return None
    store = stores[0]

    def check() -> bool:
        store.get("readyz-probe")  # any answer will do; an error or a hang is "not ready"
        return True

    return check


def _say_token(no_token: bool, generated: str | None, url: str) -> None:
    if no_token:
        sys.stderr.write(
            "acpstack serve: WARNING: no token (--no-token): any user or process on this "
            "machine can drive the agent, and run commands as you\n"
        )
    if generated is not None:
        sys.stderr.write(
            "acpstack serve: no token was given, so this one was made for this run; "
            f"connect with\n    {url}?token={generated}\n"
        )


def _named_agent(name: str) -> list[str]:
    """The command of the agent called `name`; its `env` goes into ours (every agent
    process inherits it). A binary agent is downloaded now, before serving."""
    from acpstack.cli._cmd_chat import resolve_name
    from acpstack.cli._config import load_config
    from acpstack.cli._errors import CliError
    from acpstack.cli._paths import config_file
    from acpstack.cli._registry import RegistryError

    launch = resolve_name(name, load_config(config_file()))
    try:
        command = launch.ready_command(_progress)
    except RegistryError as exc:
        raise CliError(str(exc)) from None
    os.environ.update(launch.env)
    return command


def _token(args: argparse.Namespace) -> tuple[str | None, str | None]:
    if args.token and args.token_env:
        return None, "give --token or --token-env, not both"
    if args.token_env:
        value = os.environ.get(args.token_env, "")
        if not value:
            return None, f"the environment variable {args.token_env} is empty or not set"
        return value, None
    return args.token or None, None


def _token_file(path: str | None) -> tuple[dict[str, str], str | None]:
    """--token-file: token -> principal name, from lines 'NAME TOKEN'."""
    if path is None:
        return {}, None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        return {}, f"cannot read the token file {path}: {exc.strerror}"
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            return {}, f"{path}, line {number}: expected 'NAME TOKEN'"
        name, token = fields
        if token in tokens:
            return {}, f"{path}, line {number}: a token given twice"
        tokens[token] = name
    if not tokens:
        return {}, f"the token file {path} names no token"
    return tokens, None


def _agent_source(
    args: argparse.Namespace, agent_command: list[str] | None, stores: list[Any]
) -> tuple[Any, str]:
    if agent_command:
        return agent_command, f"`{' '.join(agent_command)}` (one process per connection)"
    if args.agent:
        return load_factory(args.agent), f"{args.agent} (one instance per connection)"
    return _reference_agent(args, stores), "the reference agent (one instance per connection)"


def load_factory(spec: str) -> Callable[[], Any]:
    """`module:name` or `path/to/file.py:name` -> that attribute (an Agent class or factory)."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ImportError(f"expected MODULE:NAME or FILE.py:NAME, got {spec!r}")
    if target.endswith(".py"):
        path = Path(target).resolve()
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    factory = getattr(module, name)
    if not callable(factory):
        raise AttributeError(f"{spec} is not a class or function")
    return factory  # type: ignore[no-any-return]


def _reference_agent(args: argparse.Namespace, stores: list[Any]) -> Callable[[], Any]:
    from acpstack.cli._refagent import ReferenceAgent, open_session_store, withhold_key
    from acpstack.cli._scripted import ScriptedBrain

    store = open_session_store(args.store)  # shared: sessions outlive connections
    stores.append(store)
    if args.model:
        from acpstack.cli._llm import LlmBrain

        key = os.environ.get(args.api_key_env)
        brain: Any = LlmBrain(
            model=args.model,
            base_url=args.base_url or "https://api.openai.com/v1",
            api_key=key,
            api_key_env=args.api_key_env,
        )
        withhold_key(args.api_key_env)  # the agent's own commands do not inherit it
    else:
        brain = ScriptedBrain()
    return lambda: ReferenceAgent(brain, store=store)


def _progress(text: str) -> None:
    sys.stderr.write(text + "\n")
