"""`acpstack chat`: a terminal client for any ACP agent (interactive or headless).

This module holds the chat's life: starting the agent, opening the session, the exit code
and (with `--format json`) the result record, signals and `--timeout`. The headless turn
is in `_chat_headless.py`, the prompt loop in `_chat_interactive.py`, the slash commands
in `_commands.py`, the rendering in `_render.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from acpstack.cli._chat_auth import AuthStatusShown
from acpstack.cli._chat_book import SessionBook, usage_of
from acpstack.cli._chat_children import ChildSessions
from acpstack.cli._eof_key import EndOfFileKey
from acpstack.cli._errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TIMEOUT, EXIT_USAGE, CliError
from acpstack.cli._policy import ChatPolicy, LabelledRule
from acpstack.cli._redact import Redactor
from acpstack.cli._registry import AgentLaunch
from acpstack.cli._render import Renderer
from acpstack.cli._streams import quiet_when_gone
from acpstack.client import ClientRuntime, ClientSession, SessionState
from acpstack.local import become_subreaper, end_orphans
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.wire import DEFAULT_MAX_MESSAGE_SIZE, CapabilityError, RequestError

if TYPE_CHECKING:
    from acpstack.cli._input import ChatInput

log = logging.getLogger("acpstack.cli")

#: Signals that end the chat like quitting does; the exit code is 128 + the signal number.
TERMINATING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
FORMATS = ("text", "json", "quiet")


def default_agent_command() -> list[str]:
    return [sys.executable, "-m", "acpstack", "agent"]


@dataclass
class ChatOptions:
    agent_command: list[str] = field(default_factory=default_agent_command)
    agent_env: dict[str, str] = field(default_factory=dict)
    launch: AgentLaunch | None = None  # an agent by name (a binary is downloaded on start)
    cwd: str = field(default_factory=os.getcwd)
    prompt: str | None = None
    output: str = "text"  # headless: text, json or quiet
    timeout: float | None = None  # headless: the whole run; interactive: each turn
    rules: list[LabelledRule] = field(default_factory=list)
    deny_all: bool = False
    session: str | None = None  # the agent's session id to load (or resume)
    interactive: bool = True  # the prompt loop
    ask_user: bool = False  # permission questions answered by key on the terminal
    url: str | None = None  # a remote agent (streamable HTTP or WebSocket) instead of a command
    token: str | None = None  # the remote server's token
    auth_method: str | None = None
    mode: str | None = None
    config: list[tuple[str, str]] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)
    enable_fs: bool = True
    enable_terminal: bool = True
    book: SessionBook | None = None  # session record and lock
    history_file: str | None = None  # the prompt's history (interactive)
    notices: list[str] = field(default_factory=list)  # said on stderr once the chat starts
    unstable: bool = False  # the connection speaks ACP's unstable methods (--unstable)


class Chat:
    def __init__(self, opts: ChatOptions) -> None:
        self.opts = opts
        self.shown_command = Redactor().text(" ".join(opts.agent_command))
        self.headless = not opts.interactive
        human = opts.interactive or opts.output == "text"
        self.out = quiet_when_gone(sys.stdout)
        self.console = Console(file=self.out if human else sys.stderr, highlight=False)
        self.err = Console(file=quiet_when_gone(sys.stderr), highlight=False, soft_wrap=True)
        self.input: ChatInput | None = None  # the keyboard, when someone is at it
        # Ctrl-D stays a key while the chat reads the keyboard (see EndOfFileKey)
        self.keyboard: EndOfFileKey | None = None
        self.policy = ChatPolicy(
            rules=opts.rules,
            ask=self._ask_permission if opts.ask_user else None,
            report=self.say,
            deny_all=opts.deny_all,
        )
        self.runtime = ClientRuntime(
            permission_policy=self.policy,
            on_update=self._on_update,
            on_dropped=self._on_dropped,
            choose_auth_method=self._choose_auth,
            run_terminal_login=None if opts.url else self._terminal_login,
            on_auth_status=AuthStatusShown(self),
            ask_elicitation=self._ask_elicitation if opts.ask_user else None,
            enable_fs=opts.enable_fs,
            enable_terminal=opts.enable_terminal,
        )
        self.renderer: Renderer | None = self._renderer() if human else None
        self.children: ChildSessions | None = (  # subagents and messages as json records
            self._child_records() if self.headless and opts.output == "json" else None
        )
        self.session_id: str | None = None
        self.turn: asyncio.Task[acp.PromptResponse] | None = None
        self.quit = asyncio.Event()
        self.interrupts = 0
        self.stop_reason: str | None = None
        self.protocol_version: int | None = None  # the ACP version negotiated
        self.error: str | None = None
        self.forced_exit: int | None = None  # set by a signal or the timeout
        self.replaying = False  # session/load's history: not shown headless
        self._stdout_closed = False
        self._body: asyncio.Task[int] | None = None
        self._cancel_on_exit: str | None = None  # the session whose turn was interrupted
        self._kept: set[Any] = set()

    def _renderer(self) -> Renderer:
        if self.console.is_terminal:
            from acpstack.cli._view_live import LiveView

            return Renderer(LiveView(self.console), self.runtime, rich=True)
        from acpstack.cli._view_plain import PlainView

        return Renderer(PlainView(self.out), self.runtime, rich=False)

    # -- what the agent sends -------------------------------------------------------------

    def _child_records(self) -> ChildSessions:
        from acpstack.cli._chat_children import RecordSink

        def state(session_id: str) -> SessionState | None:
            session = self.runtime.sessions.get(session_id)
            return session.state if session is not None else None

        return ChildSessions(state, RecordSink(self.write_record))

    def _on_update(self, session_id: str, update: Any) -> None:
        if self.replaying and self.headless:
            return
        if self.children is not None:
            self.children.on_update(session_id, update)
        renderer = self.renderer
        if renderer is not None:
            self.show(lambda: renderer.on_update(session_id, update))

    def show(self, draw: Callable[[], None]) -> None:
        """Run `draw` now, or above the prompt when the prompt is on screen."""
        if self.input is not None and self.input.active:
            from prompt_toolkit.application import run_in_terminal

            self.keep(asyncio.ensure_future(run_in_terminal(draw)))
            return
        draw()

    def _on_dropped(self, dropped: Any) -> None:
        what = dropped.method or "a message"
        note = Text(
            f"(dropped {what} from the agent: {dropped.reason}, {dropped.detail})", style="dim"
        )
        if self.renderer is not None and not self.headless:
            self.renderer.view.print(note)
        else:
            self.err.print(note)

    def keep(self, task: asyncio.Future[Any]) -> None:
        """Hold a fire-and-forget task until it is done (the loop keeps only weak references)."""
        self._kept.add(task)
        task.add_done_callback(self._kept.discard)

    async def _ask_permission(self, request: acp.RequestPermissionRequest) -> Any:
        from acpstack.cli._input import Interrupted

        assert self.renderer is not None and self.input is not None
        keys = [str(i) for i in range(1, min(len(request.options), 9) + 1)]
        self.renderer.permission(request, keys)
        self.renderer.view.pause()
        try:
            question = f"choose {keys[0]}-{keys[-1]} (Esc rejects, Ctrl-C cancels the turn): "
            choices = list(zip(keys, request.options, strict=False))
            return await self.input.read_choice(
                question, choices, lambda option: option.name, none="rejected"
            )
        except Interrupted:
            self.on_interrupt()
            return None
        finally:
            self.renderer.view.resume()

    async def _ask_elicitation(self, request: acp.CreateElicitationRequest) -> Any:
        from acpstack.cli._chat_elicit import ask_elicitation

        return await ask_elicitation(self, request)

    async def _choose_auth(self, methods: list[acp.AuthMethod]) -> str | None:
        from acpstack.cli._chat_auth import choose_auth

        return await choose_auth(self, methods)

    async def _terminal_login(self, method: acp.AuthMethodTerminal) -> bool:
        from acpstack.cli._chat_auth import run_terminal_login

        return await run_terminal_login(self, method)

    def write_record(self, record: dict[str, Any]) -> None:
        """One line of `--format json` on stdout."""
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
        code = await self._run()
        if self.opts.output == "json" and self.headless:
            self.write_record(self.result_record(code))
        if self.opts.book is not None:
            self.opts.book.release()
        return code

    def result_record(self, code: int) -> dict[str, Any]:
        session = self.runtime.sessions.get(self.session_id) if self.session_id else None
        counts = self.policy.counts
        return {
            "type": "result",
            "exitCode": code,
            "stopReason": self.stop_reason,
            "sessionId": self.session_id,
            "protocolVersion": self.protocol_version,
            "usage": usage_of(session.state) if session is not None else None,
            "permissions": {
                "requested": counts.requested,
                "approved": counts.approved,
                "denied": counts.denied,
            },
            "error": self.error,
        }

    def say(self, text: Text) -> None:
        """A line for the user: on the terminal through the view (which keeps its live area
        in order), else on stderr (stdout is for the session, or for the records)."""
        if self.renderer is not None and self.console.is_terminal:
            self.renderer.view.print(text)
        else:
            self.err.print(text)

    def fail(self, message: str) -> None:
        """Report an error once: to the user, and in the result record."""
        self.error = message
        self.say(Text(message, style="red"))

    async def _run(self) -> int:
        if self.opts.prompt is None and self.headless:
            self.opts.prompt = sys.stdin.read()  # before anything starts
            if not self.opts.prompt.strip():
                self.fail("error: empty prompt (give -p PROMPT or write it to stdin)")
                return EXIT_USAGE
        for notice in self.opts.notices:
            self.say(Text(notice, style="yellow"))
        loop = asyncio.get_running_loop()
        # Orphans of the agent and of its commands (also those that left their process group
        # with setsid) are re-parented to us, so that nothing outlives the chat.
        subreaper = become_subreaper()
        self._body = body = asyncio.ensure_future(self._run_agent())
        handled = self._handle_signals(loop)
        deadline = None
        if self.headless and self.opts.timeout is not None:
            deadline = loop.call_later(self.opts.timeout, self._on_timeout)
        try:
            await asyncio.wait([body])
        except asyncio.CancelledError:  # we are cancelled ourselves: take the agent down with us
            body.cancel()
            await asyncio.wait([body])
            raise
        finally:
            if deadline is not None:
                deadline.cancel()
            for sig in handled:
                loop.remove_signal_handler(sig)
            await _end_orphans(subreaper)
        if self.forced_exit is not None:
            if not body.cancelled() and body.exception() is not None:
                log.debug("while shutting down", exc_info=body.exception())
            return self.forced_exit
        return body.result()

    def _handle_signals(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        """SIGTERM and SIGHUP (and Ctrl-C when nobody is at the keyboard) end the chat like
        quitting: the running turn is cancelled, terminals released, the agent stopped."""
        at_keyboard = self.opts.interactive or self.opts.ask_user
        handlers: dict[int, Any] = {
            sig: (lambda s=sig: self.stop(128 + s)) for sig in TERMINATING_SIGNALS
        }
        handlers[signal.SIGINT] = (
            self.on_interrupt if at_keyboard else (lambda: self.stop(EXIT_INTERRUPTED))
        )
        handled = []
        for sig, handler in handlers.items():
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, handler)
                handled.append(sig)
        return handled

    def _on_timeout(self) -> None:
        self.fail(f"timed out after {self.opts.timeout:g} s (--timeout)")
        self.stop(EXIT_TIMEOUT)

    def stop(self, code: int) -> None:
        """End the chat now with `code`: cancel the turn, stop the agent."""
        if self.forced_exit is not None:
            return  # already on the way out
        self.forced_exit = code
        self.quit.set()
        if self.turn is not None and not self.turn.done():
            self._cancel_on_exit = self.session_id
        if self._body is not None:
            self._body.cancel()

    def on_interrupt(self) -> None:
        """Ctrl-C while a turn runs: cancel it; a second one quits."""
        if self.turn is None or self.turn.done():
            self.stop(EXIT_INTERRUPTED)
            return
        if self.renderer is not None and not (self.input is not None and self.input.active):
            self.renderer.view.wipe_echo()  # the terminal echoed ^C where the next line goes
        self.interrupts += 1
        if self.interrupts >= 2:
            self.say(Text("quitting", style="red"))
            self.stop(EXIT_INTERRUPTED)
            return
        self.say(Text("cancelling the turn (Ctrl-C again to quit)", style="yellow"))
        assert self.session_id is not None
        self.keep(asyncio.get_running_loop().create_task(self.runtime.cancel(self.session_id)))

    async def _run_agent(self) -> int:
        from acpstack.cli._chat_connect import connect
        from acpstack.client import connect_client

        try:
            if self.opts.book is not None:
                self.opts.book.lock_name()
                if self.opts.session or self.opts.book.known_session_id:
                    self.opts.book.lock_session(
                        self.opts.session or self.opts.book.known_session_id or ""
                    )
            transport = await connect(self)
        except CliError as exc:
            self.fail(exc.message)
            return exc.exit_code
        if self.opts.output == "json" and self.headless:
            from acpstack.cli._tap import TapTransport

            transport = TapTransport(
                transport, self.write_record, max_message_size=DEFAULT_MAX_MESSAGE_SIZE
            )
        conn = connect_client(
            self.runtime,
            transport,
            unstable=self.opts.unstable,
            max_message_size=DEFAULT_MAX_MESSAGE_SIZE,
        )
        if self.opts.interactive or self.opts.ask_user:
            self.input = self._make_input()
            if sys.stdin is not None and sys.stdin.isatty():
                self.keyboard = EndOfFileKey(sys.stdin.fileno())
        with self.keyboard or contextlib.nullcontext():
            async with conn.connection:  # on the way out: the agent stopped, terminals released
                try:
                    return await self._main()
                except ConnectionClosed as exc:
                    self.fail(f"the agent stopped: {exc}")
                except RequestError as err:
                    self.fail(f"error from the agent: {err.message} (code {err.code})")
                except CapabilityError as exc:
                    self.fail(f"error: {exc}")
                except CliError as exc:
                    self.fail(exc.message)
                    return exc.exit_code
                finally:
                    await self._cancel_turn_on_exit()
                    await self._end_kept()
        return EXIT_ERROR

    def _make_input(self) -> ChatInput:
        from pathlib import Path

        from acpstack.cli._commands import command_names
        from acpstack.cli._input import ChatCompleter, ChatInput

        completer = ChatCompleter(lambda: command_names(self), os.path.abspath(self.opts.cwd))
        history = Path(self.opts.history_file) if self.opts.history_file else None
        return ChatInput(history, completer)

    async def _end_kept(self) -> None:
        """The kept tasks end with the chat, before the agent stops: given a second to finish
        (output to print, a session/cancel to send), then cancelled and awaited."""
        if not self._kept:
            return
        _, late = await asyncio.wait(list(self._kept), timeout=1.0)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)

    async def _cancel_turn_on_exit(self) -> None:
        """After a signal: tell the agent the turn is cancelled (session/cancel) before it is stopped."""
        session_id, self._cancel_on_exit = self._cancel_on_exit, None
        if session_id is not None:
            with contextlib.suppress(Exception):  # the agent may be gone already
                await asyncio.wait_for(self.runtime.cancel(session_id), 1.0)

    async def _main(self) -> int:
        init = await self.runtime.initialize()
        self.protocol_version = self.runtime.agent.protocol_version
        info = init.agent_info if isinstance(init.agent_info, acp.Implementation) else None
        if self.opts.interactive or self.console.is_terminal and self.renderer is not None:
            name = f"{info.title or info.name} {info.version}" if info else "agent"
            hint = (
                "; /help for commands, Ctrl-C cancels a turn, Ctrl-D quits"
                if self.opts.interactive
                else ""
            )
            version = f" (ACP v{self.protocol_version})"
            self.say(Text(f"connected to {name}{version}{hint}", style="dim"))
        from acpstack.cli._chat_auth import ask_auth_status
        from acpstack.cli._chat_session import apply_settings

        await ask_auth_status(self)

        await self.open_session()
        await apply_settings(self)
        if self.headless:
            from acpstack.cli._chat_headless import single_turn

            return await single_turn(self)
        from acpstack.cli._chat_interactive import interactive

        return await interactive(self)

    # -- the session --------------------------------------------------------------------

    def session(self) -> ClientSession:
        assert self.session_id is not None
        return self.runtime.sessions[self.session_id]

    async def open_session(self) -> None:
        from acpstack.cli._chat_session import open_session

        await open_session(self)

    async def new_session(self, *, switched: bool = False) -> None:
        from acpstack.cli._chat_session import new_session

        await new_session(self, switched=switched)

    async def load_session(self, session_id: str, *, switched: bool = False) -> None:
        from acpstack.cli._chat_session import load_session

        await load_session(self, session_id, switched=switched)


async def _end_orphans(subreaper: bool) -> None:
    """End what the agent left behind after it was stopped: processes it (or a command it
    ran) started that escaped its process group. As a child subreaper every one of them is
    our child by now; the agent and our terminals are already gone."""
    if subreaper:
        ended = await end_orphans()
        if ended:
            log.info("ended %d process(es) the agent left behind: %s", len(ended), ended)


def run_chat(opts: ChatOptions, *, verbose: bool = False) -> int:
    """Run the chat; library logs go to stderr (warnings and up with `verbose`, else errors:
    what matters to the user is shown by the chat itself)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("acpstack: %(name)s: %(message)s"))
    root = logging.getLogger("acpstack")
    if not root.handlers:
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.ERROR)
    try:
        return asyncio.run(Chat(opts).run())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
