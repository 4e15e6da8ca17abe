"""`acpstack chat`: a terminal client for any ACP agent (interactive or headless)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from acpstack.cli._chat_input import (
    BUILTINS,
    HeadlessPolicy,
    InteractivePolicy,
    LineReader,
    install_completion,
    quiet_when_gone,
)
from acpstack.cli._redact import Redactor
from acpstack.client import ClientRuntime, ClientSession, connect_client
from acpstack.local import become_subreaper, end_orphans
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.transports import SubprocessTransport
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, CapabilityError, RequestError

log = logging.getLogger("acpstack.cli")

#: Recent agent stderr lines kept (the last 20 are shown when the agent dies).
STDERR_TAIL_LINES = 200
#: Signals that end the chat like quitting does; the exit code is 128 + the signal number.
TERMINATING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)

CHAT_HELP = """Built-in commands:
  /mode [ID]            show or switch the session mode
  /config [ID VALUE]    show or set a config option
  /sessions             list the agent's sessions
  /load ID              load a session (its history is replayed)
  /help                 this text; the agent's own commands are listed below
  /quit                 leave (or Ctrl-D); Ctrl-C cancels a running turn, twice quits"""


def default_agent_command() -> list[str]:
    return [sys.executable, "-m", "acpstack", "agent"]


@dataclass
class ChatOptions:
    agent_command: list[str] = field(default_factory=default_agent_command)
    cwd: str = field(default_factory=os.getcwd)
    prompt: str | None = None
    json_output: bool = False
    approve_all: bool = False
    deny_all: bool = False
    allow_kinds: list[str] = field(default_factory=list)
    session: str | None = None
    interactive: bool = True  # the prompt loop (REPL)
    render: bool = (
        False  # show the whole session (Markdown, tool calls, plan), not only the final text
    )
    ask_user: bool = False  # answer permission requests by key on the terminal
    auto_approve_reason: str | None = None  # demo without a terminal: approve, and say why
    url: str | None = None  # a remote agent (streamable HTTP or WebSocket) instead of agent_command
    token: str | None = None  # the remote server's token


class Chat:
    def __init__(self, opts: ChatOptions) -> None:
        from acpstack.cli._render import Renderer

        self.opts = opts
        # The agent's command line as we show it: an API key in a --base-url stays out.
        self.shown_command = Redactor().text(" ".join(opts.agent_command))
        self.render = opts.interactive or opts.render
        out = quiet_when_gone(sys.stdout if self.render and not opts.json_output else sys.stderr)
        self.console = Console(file=out, highlight=False, soft_wrap=True)
        self.err = Console(file=quiet_when_gone(sys.stderr), highlight=False, soft_wrap=True)
        self.reader: LineReader | None = None
        policy: Any = (
            InteractivePolicy(self)
            if opts.ask_user
            else HeadlessPolicy(opts, self.console if self.render else self.err)
        )
        self.runtime = ClientRuntime(
            permission_policy=policy,
            on_update=self._on_update,
            choose_auth_method=self._choose_auth,
        )
        self.renderer = Renderer(self.console, self.runtime)
        self.session_id: str | None = None
        self.turn: asyncio.Task[acp.PromptResponse] | None = None
        self.quit = asyncio.Event()
        self.interrupts = 0
        self._stdout_closed = False
        self.exit_signal: int | None = None  # the signal that is ending the chat
        self._body: asyncio.Task[int] | None = None
        self._cancel_on_exit: str | None = None  # the session whose turn a signal interrupted

    def _on_update(self, session_id: str, update: Any) -> None:
        if self.render and not self.opts.json_output:
            self.renderer.on_update(session_id, update)

    async def _choose_auth(self, methods: list[acp.AuthMethod]) -> str | None:
        if not self.opts.interactive or self.reader is None:
            names = ", ".join(f"{m.id} ({m.name})" for m in methods)
            self.err.print(f"the agent requires authentication; methods: {names}")
            return None
        self.renderer.end_message()
        self.console.print(Text("The agent asks you to authenticate:", style="bold"))
        for index, method in enumerate(methods, 1):
            description = f": {method.description}" if isinstance(method.description, str) else ""
            self.console.print(f"  [{index}] {method.name}{description}")
        line = await self.reader.read(f"choose 1-{len(methods)} (empty to skip): ")
        if line and line.strip().isdigit() and 1 <= int(line) <= len(methods):
            return methods[int(line) - 1].id
        return None

    def _wire(self, record: dict[str, Any]) -> None:
        if self._stdout_closed:
            return
        try:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. piped into `head`: stop writing, finish quietly
            self._stdout_closed = True
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    # -- lifecycle ----------------------------------------------------------------------

    async def run(self) -> int:
        if self.opts.prompt is None and not self.opts.interactive:
            self.opts.prompt = (
                sys.stdin.read()
            )  # before anything starts: a signal here ends us plainly
            if not self.opts.prompt.strip():
                self.err.print("error: empty prompt (give -p PROMPT or write it to stdin)")
                return 2
        loop = asyncio.get_running_loop()
        # Orphans of the agent and of its commands (also those that left their process group
        # with setsid) are re-parented to us, so that nothing outlives the chat.
        subreaper = become_subreaper()
        self._body = body = asyncio.ensure_future(self._run_agent())
        handled = self._handle_signals(loop)
        try:
            await asyncio.wait([body])
        except asyncio.CancelledError:  # we are cancelled ourselves: take the agent down with us
            body.cancel()
            await asyncio.wait([body])
            raise
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
            if self.reader is not None:
                self.reader.restore_terminal()
            await _end_orphans(subreaper)
        if self.exit_signal is not None:
            if not body.cancelled() and body.exception() is not None:
                log.debug("while shutting down", exc_info=body.exception())
            return 128 + self.exit_signal
        return body.result()

    def _handle_signals(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        """SIGTERM and SIGHUP (and Ctrl-C when nobody is at the keyboard) end the chat like
        quitting: the running turn is cancelled, terminals released, the agent stopped."""
        interactive = self.opts.interactive or self.opts.ask_user
        handlers: dict[int, Any] = {
            sig: (lambda s=sig: self._on_terminate(s)) for sig in TERMINATING_SIGNALS
        }
        handlers[signal.SIGINT] = (
            self._on_interrupt if interactive else (lambda: self._on_terminate(signal.SIGINT))
        )
        handled = []
        for sig, handler in handlers.items():
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, handler)
                handled.append(sig)
        return handled

    def _on_terminate(self, sig: int) -> None:
        if self.exit_signal is not None:
            return  # already on the way out
        self.exit_signal = sig
        self.quit.set()
        if self.turn is not None and not self.turn.done():
            self._cancel_on_exit = self.session_id
        if self._body is not None:
            self._body.cancel()

    async def _run_agent(self) -> int:
        try:
            if self.opts.url:
                from acpstack.cli._remote import REMOTE_ERRORS, describe, remote_transport

                try:
                    transport: Any = await remote_transport(self.opts.url, self.opts.token)
                except REMOTE_ERRORS as exc:
                    self.err.print(describe(exc))
                    return 2
            else:
                transport = await SubprocessTransport.spawn(
                    self.opts.agent_command,
                    cwd=self.opts.cwd,
                    stderr_tail_lines=STDERR_TAIL_LINES,
                    description=self.shown_command,
                )
        except OSError as exc:
            self.err.print(f"error: could not start the agent `{self.shown_command}`: {exc}")
            return 2
        if self.opts.json_output:
            from acpstack.cli._tap import TapTransport

            transport = TapTransport(
                transport, self._wire, max_message_size=DEFAULT_MAX_MESSAGE_SIZE
            )
        conn = connect_client(self.runtime, transport, max_message_size=DEFAULT_MAX_MESSAGE_SIZE)
        if self.opts.interactive or self.opts.ask_user:
            self.reader = LineReader(asyncio.get_running_loop())
            self.reader.start()
        async with (
            conn.connection
        ):  # on the way out: the agent is stopped, then every terminal released
            try:
                return await self._main()
            except ConnectionClosed as exc:
                self.renderer.end_message()
                self.err.print(Text(f"the agent stopped: {exc}", style="red"))
                return 3
            except RequestError as err:
                self.renderer.end_message()
                self.err.print(
                    Text(f"error from the agent: {err.message} (code {err.code})", style="red")
                )
                return 4
            except CapabilityError as exc:
                self.err.print(Text(f"error: {exc}", style="red"))
                return 4
            finally:
                await self._cancel_turn_on_exit()

    async def _cancel_turn_on_exit(self) -> None:
        """After a signal: tell the agent the turn is cancelled (session/cancel) before it is stopped."""
        session_id, self._cancel_on_exit = self._cancel_on_exit, None
        if session_id is not None:
            with contextlib.suppress(Exception):  # the agent may be gone already
                await asyncio.wait_for(self.runtime.cancel(session_id), 1.0)

    async def _main(self) -> int:
        init = await self.runtime.initialize()
        info = init.agent_info if isinstance(init.agent_info, acp.Implementation) else None
        if self.render and not self.opts.json_output:
            name = f"{info.title or info.name} {info.version}" if info else "agent"
            self.console.print(
                Text(
                    f"connected to {name}; /help for commands, Ctrl-C cancels a turn, Ctrl-D quits",
                    style="dim",
                )
            )
        await self._open_session()
        if self.opts.prompt is not None or not self.opts.interactive:
            return await self._single_turn()
        return await self._interactive()

    async def _open_session(self) -> None:
        cwd = os.path.abspath(self.opts.cwd)
        if self.opts.session:
            caps = self.runtime.agent.capabilities
            if caps is not None and caps.load_session is True:
                await self.runtime.load_session(self.opts.session, cwd)
            else:
                await self.runtime.resume_session(self.opts.session, cwd)
            self.session_id = self.opts.session
        else:
            self.session_id = (await self.runtime.new_session(cwd)).session_id
        self.renderer.end_message()

    # -- headless ---------------------------------------------------------------------

    async def _single_turn(self) -> int:
        """Headless (`-p` or stdin): one turn; the final message text goes to stdout."""
        assert self.session_id is not None and self.opts.prompt is not None
        prompt = self.opts.prompt
        before = len(self._session().state.messages)
        self.turn = asyncio.ensure_future(self.runtime.prompt(self.session_id, prompt))
        try:
            result = await self.turn
        finally:
            self.turn = None
        self.renderer.end_message()
        if not self.opts.json_output and not self.render:
            final = [m for m in self._session().state.messages[before:] if m.speaker == "agent"]
            text = final[-1].text if final else ""
            sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
            sys.stdout.flush()
        if result.stop_reason != "end_turn":
            self.err.print(f"the turn ended with stopReason {result.stop_reason!r}")
            return 1
        return 0

    def _session(self) -> ClientSession:
        assert self.session_id is not None
        return self.runtime.sessions[self.session_id]

    # -- interactive --------------------------------------------------------------------

    def _on_interrupt(self) -> None:
        if self.turn is not None and not self.turn.done():
            self.interrupts += 1
            if self.interrupts >= 2:
                self.console.print(Text("\nquitting", style="red"))
                self.quit.set()
                self.turn.cancel()
                return
            self.console.print(Text("\ncancelling the turn (Ctrl-C again to quit)", style="yellow"))
            assert self.session_id is not None
            asyncio.get_running_loop().create_task(self.runtime.cancel(self.session_id))
        else:
            self.console.print(Text("\nbye", style="dim"))
            self.quit.set()

    async def _interactive(self) -> int:
        assert self.reader is not None
        install_completion(self)
        while not self.quit.is_set():
            line = await self._read_or_quit("> ")
            if line is None:
                break
            line = line.strip()
            if not line:
                continue
            if line.split()[0] in BUILTINS:
                if not await self._builtin(line):
                    break
                continue
            await self._run_turn(line)
        return 0

    async def _read_or_quit(self, prompt: str) -> str | None:
        assert self.reader is not None
        read = self.reader.read(prompt)
        quit_wait: asyncio.Future[Any] = asyncio.ensure_future(self.quit.wait())
        done, _ = await asyncio.wait([read, quit_wait], return_when=asyncio.FIRST_COMPLETED)
        quit_wait.cancel()
        if read in done:
            return read.result()
        return None

    async def _run_turn(self, text: str) -> None:
        assert self.session_id is not None
        self.interrupts = 0
        self.turn = asyncio.ensure_future(self.runtime.prompt(self.session_id, text))
        poller = asyncio.ensure_future(self._poll_terminals())
        try:
            result = await self.turn
            self.renderer.end_message()
            if result.stop_reason != "end_turn":
                self.console.print(Text(f"[turn ended: {result.stop_reason}]", style="yellow"))
        except asyncio.CancelledError:
            self.renderer.end_message()
            current = asyncio.current_task()
            if not self.quit.is_set() or (current is not None and current.cancelling()):
                raise  # not our double Ctrl-C: we are being cancelled ourselves
        except RequestError as err:
            self.renderer.end_message()
            self.console.print(
                Text(f"error from the agent: {err.message} (code {err.code})", style="red")
            )
        finally:
            poller.cancel()
            self.turn = None

    async def _poll_terminals(self) -> None:
        assert self.session_id is not None
        while True:
            await asyncio.sleep(0.25)
            self.renderer.poll_terminals(self.session_id)

    async def _builtin(self, line: str) -> bool:
        parts = line.split()
        command, args = parts[0], parts[1:]
        assert self.session_id is not None
        session = self._session()
        if command == "/quit":
            return False
        if command == "/help":
            self.console.print(CHAT_HELP)
            for cmd in session.state.available_commands:
                self.console.print(f"  /{cmd.name:<20} {cmd.description}")
        elif command == "/mode":
            if not args:
                self.console.print(f"mode: {session.state.current_mode_id}")
            else:
                await self.runtime.agent.session_set_mode(
                    acp.SetSessionModeRequest(session_id=self.session_id, mode_id=args[0])
                )
        elif command == "/config":
            if len(args) >= 2:
                value: Any = {"true": True, "false": False}.get(args[1].lower(), args[1])
                params = acp.SetSessionConfigOptionRequest(
                    session_id=self.session_id, config_id=args[0], value=value
                )
                if isinstance(value, bool):
                    params.type = "boolean"
                result = await self.runtime.agent.session_set_config_option(params)
                session.state.config_options = list(result.config_options)
            for option in session.state.config_options:
                self.console.print(f"  {option.id} = {option.current_value}  ({option.name})")
        elif command == "/sessions":
            listing = await self.runtime.agent.session_list()
            for info in listing.sessions:
                title = info.title if isinstance(info.title, str) else ""
                self.console.print(f"  {info.session_id}  {info.updated_at or ''}  {title}")
        elif command == "/load" and args:
            self.session_id = args[0]
            await self.runtime.load_session(args[0], os.path.abspath(self.opts.cwd))
            for message in self._session().state.messages:
                who = {"user": "you", "agent": "agent", "thought": "thought"}[message.speaker]
                self.console.print(Text(f"{who}: ", style="bold"), Text(message.text))
        else:
            self.console.print(CHAT_HELP)
        return True


async def _end_orphans(subreaper: bool) -> None:
    """End what the agent left behind after it was stopped: processes it (or a command it
    ran) started that escaped its process group. As a child subreaper every one of them is
    our child by now; the agent and our terminals are already gone."""
    if subreaper:
        ended = await end_orphans()
        if ended:
            log.info("ended %d process(es) the agent left behind: %s", len(ended), ended)


def run_chat(opts: ChatOptions) -> int:
    try:
        return asyncio.run(Chat(opts).run())
    except KeyboardInterrupt:
        return 130


async def list_sessions(agent_command: Sequence[str], cwd: str | None) -> int:
    runtime = ClientRuntime()
    from acpstack.client import spawn_agent

    async with spawn_agent(list(agent_command), runtime) as _conn:
        await runtime.initialize()
        params = acp.ListSessionsRequest()
        if cwd:
            params.cwd = os.path.abspath(cwd)
        cursor: str | None = None
        count = 0
        while True:
            if cursor:
                params.cursor = cursor
            listing = await runtime.agent.session_list(params)
            for info in listing.sessions:
                title = info.title if isinstance(info.title, str) else ""
                updated = info.updated_at if isinstance(info.updated_at, str) else ""
                sys.stdout.write(f"{info.session_id}\t{updated}\t{info.cwd}\t{title}\n")
                count += 1
            cursor = listing.next_cursor if isinstance(listing.next_cursor, str) else None
            if not cursor:
                break
    if count == 0:
        sys.stderr.write("no sessions\n")
    return 0
