"""Scripted ACP client built on the official Python SDK (PyPI ``agent-client-protocol``).

Usage (inside the private venv made by ``tests/interop/_foreign.py``)::

    python py_sdk_client.py [--scenario prompts|cancel] [--cwd DIR]
        [--permission allow|reject|cancel|hold] [--prompt TEXT]... [--timeout SECONDS]
        [--caps all|fs|none] -- AGENT_ARGV...

Spawns the agent, runs ``initialize`` (clientInfo py-sdk-client; capabilities by
``--caps``: ``fs`` (default) = fs read/write true, terminal false; ``all`` = fs and
terminal; ``none`` = neither), ``session/new`` and the scenario, shuts the agent down
(close stdin, wait, terminate, kill) and prints ONE JSON report on stdout::

    {"initialize": <raw initialize result>, "sessionId": "...",
     "turns": [{"prompt", "stopReason", "updates": [<raw update objects, wire order>],
                "sdkUpdates": [<the updates the SDK accepted, as it parsed them>],
                "error": null | {"code", "message"[, "data"]}}],
     "permissionRequests": [<raw params>], "fsReads": [{"path", "line", "limit"}],
     "fsWrites": [{"path", "content"}], "lateUpdates": [<raw updates outside any turn>],
     "terminals": [{"command", "args", "cwd"}], "agentExitCode": int | null}

File and terminal requests are served (and recorded) whatever ``--caps`` says, so a
report shows any call the agent makes that was not advertised. Terminals are real
processes: no shell, their own process group, stdout and stderr together, only the last
``outputByteLimit`` bytes kept; kill and release end the whole group.

Exit status 0 with the report; non-zero with a message on stderr when the run
itself failed (spawn, initialize, session/new, timeout).

Scenarios:
* ``prompts`` (default): send each ``--prompt`` in order in one session.
* ``cancel``: send ``wait`` (or the first ``--prompt``), wait for the first
  ``session/update`` of the turn, send ``session/cancel`` and finish the turn.

Permission answers: ``allow`` = first allow_once option, ``reject`` = first
reject_once option, ``cancel`` = outcome cancelled, ``hold`` = answer only when the
turn is cancelled (then ``cancelled``).  After ``session/cancel`` every pending and
later permission request of the turn is answered ``cancelled``, as the spec requires.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.stdio import spawn_agent_process

CLIENT_NAME = "py-sdk-client"
SDK_VERSION = version("agent-client-protocol")
STDIO_LIMIT = 64 * 1024 * 1024


class Recorder:
    """Everything the report contains; fed by the raw-message observer and the handlers."""

    def __init__(self) -> None:
        self.initialize: Any = None
        self.session_id: str | None = None
        self.turns: list[dict[str, Any]] = []
        self.permission_requests: list[Any] = []
        self.fs_reads: list[dict[str, Any]] = []
        self.fs_writes: list[dict[str, Any]] = []
        self.late_updates: list[Any] = []
        self.terminals: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None  # open turn (wire view)
        self.sdk_turn: dict[str, Any] | None = None  # open turn (SDK view)
        self.first_update = asyncio.Event()
        self._out_methods: dict[Any, str] = {}  # our request id -> method
        self._responses_seen: set[Any] = set()
        self._prompt_id: Any = None

    # -- raw wire observer (called synchronously, in wire order) --------------

    def observe(self, event: StreamEvent) -> None:
        msg = event.message
        if event.direction is StreamDirection.OUTGOING:
            if "method" in msg and "id" in msg:
                self._out_methods[msg["id"]] = msg["method"]
                if msg["method"] == "session/prompt":
                    self._prompt_id = msg["id"]
                    if msg["id"] in self._responses_seen:  # response overtook the observer
                        self._close_turn()
            return
        method = msg.get("method")
        if method is None:  # a response to one of our requests
            rid = msg.get("id")
            self._responses_seen.add(rid)
            if self._out_methods.get(rid) == "initialize" and "result" in msg:
                self.initialize = msg["result"]
            if self._prompt_id is not None and rid == self._prompt_id:
                self._close_turn()
            return
        params = msg.get("params")
        if method == "session/update" and isinstance(params, dict):
            update = params.get("update")
            if self.current is not None and params.get("sessionId") == self.session_id:
                self.current["updates"].append(update)
                self.first_update.set()
            else:
                self.late_updates.append(update)
        elif method == "session/request_permission":
            self.permission_requests.append(params)

    def open_turn(self, prompt: str) -> dict[str, Any]:
        turn = {
            "prompt": prompt,
            "stopReason": None,
            "updates": [],
            "sdkUpdates": [],
            "error": None,
        }
        self.turns.append(turn)
        self.current = turn
        self.sdk_turn = turn
        self._prompt_id = None
        self.first_update.clear()
        return turn

    def _close_turn(self) -> None:
        self.current = None
        self._prompt_id = None

    def report(self, agent_exit_code: int | None) -> dict[str, Any]:
        return {
            "initialize": self.initialize,
            "sessionId": self.session_id,
            "turns": self.turns,
            "permissionRequests": self.permission_requests,
            "fsReads": self.fs_reads,
            "fsWrites": self.fs_writes,
            "lateUpdates": self.late_updates,
            "terminals": self.terminals,
            "agentExitCode": agent_exit_code,
        }


class RecordingClient:
    """Implements the ``acp.Client`` protocol: permission answers and a real on-disk fs."""

    def __init__(self, rec: Recorder, permission: str) -> None:
        self._rec = rec
        self._permission = permission
        self.cancelling = False
        self.turn_cancelled = asyncio.Event()
        self.terminals: dict[str, Terminal] = {}

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if self._rec.sdk_turn is not None and session_id == self._rec.session_id:
            self._rec.sdk_turn["sdkUpdates"].append(
                update.model_dump(mode="json", by_alias=True, exclude_none=True)
            )

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        cancelled = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if self.cancelling or self._permission == "cancel":
            return cancelled
        if self._permission == "hold":
            await self.turn_cancelled.wait()
            return cancelled
        wanted = "allow_once" if self._permission == "allow" else "reject_once"
        option = next((o for o in options if o.kind == wanted), None)
        if option is None:
            raise RequestError.invalid_params({"details": f"no {wanted} option offered"})
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        self._rec.fs_reads.append({"path": path, "line": line, "limit": limit})
        p = _absolute(path)
        try:
            data = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        except IsADirectoryError:
            raise RequestError.invalid_params({"path": path, "details": "is a directory"}) from None
        if line is not None or limit is not None:
            lines = data.split("\n")
            # keep the line terminators: every line but the last had one
            lines = [ln + "\n" for ln in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
            start = max((line or 1) - 1, 0)
            end = len(lines) if limit is None else start + limit
            data = "".join(lines[start:end])
        return ReadTextFileResponse(content=data)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self._rec.fs_writes.append({"path": path, "content": content})
        p = _absolute(path)
        try:
            with open(p, "w", encoding="utf-8", newline="") as fh:
                fh.write(content)
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> CreateTerminalResponse:
        self._rec.terminals.append({"command": command, "args": args or [], "cwd": cwd})
        variables = {v.name: v.value for v in env or []}
        try:
            terminal = await Terminal.start(command, args or [], cwd, variables, output_byte_limit)
        except OSError as exc:
            raise RequestError.invalid_params({"command": command, "details": str(exc)}) from None
        terminal_id = f"term-{len(self._rec.terminals)}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _terminal(self, terminal_id: str) -> Terminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.resource_not_found(terminal_id)
        return terminal

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        status = terminal.status() if terminal.done.is_set() else None
        return TerminalOutputResponse(
            output=terminal.text(),
            truncated=terminal.truncated,
            exit_status=TerminalExitStatus(**status) if status else None,
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        await terminal.done.wait()
        return WaitForTerminalExitResponse(**terminal.status())

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> KillTerminalResponse:
        await self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> ReleaseTerminalResponse:
        await self._terminal(terminal_id).kill()
        del self.terminals[terminal_id]
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        for terminal in self.terminals.values():
            await terminal.kill()


class Terminal:
    """One real process for terminal/*; see the module docstring."""

    def __init__(self, proc: asyncio.subprocess.Process, limit: int | None) -> None:
        self.proc = proc
        self.limit = limit
        self.buffer = bytearray()
        self.truncated = False
        self.done = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(
        cls, command: str, args: list[str], cwd: str | None, env: dict[str, str], limit: int | None
    ) -> Terminal:
        proc = await asyncio.create_subprocess_exec(
            command,
            *args,
            cwd=cwd,
            env={**os.environ, **env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(proc, limit)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.buffer += chunk
            if self.limit is not None and len(self.buffer) > self.limit:
                del self.buffer[: len(self.buffer) - self.limit]
                while self.buffer and self.buffer[0] & 0xC0 == 0x80:  # a character boundary
                    del self.buffer[0]
                self.truncated = True
        await self.proc.wait()
        self.done.set()

    def text(self) -> str:
        return self.buffer.decode("utf-8", errors="replace")

    def status(self) -> dict[str, Any]:
        code = self.proc.returncode
        if code is not None and code < 0:
            return {"exit_code": None, "signal": signal.Signals(-code).name}
        return {"exit_code": code, "signal": None}

    async def kill(self) -> None:
        if not self.done.is_set():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.done.wait()


def _absolute(path: str) -> Path:
    p = Path(path)
    if not p.is_absolute():
        raise RequestError.invalid_params({"path": path, "details": "path must be absolute"})
    return p


def _error_obj(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RequestError):
        err: dict[str, Any] = {"code": exc.code, "message": str(exc)}
        if exc.data is not None:
            err["data"] = exc.data
        return err
    return {"code": None, "message": f"{type(exc).__name__}: {exc}"}


async def _turn(conn: Any, rec: Recorder, client: RecordingClient, text: str, cancel: bool) -> None:
    turn = rec.open_turn(text)
    client.turn_cancelled.clear()
    client.cancelling = False
    task = asyncio.ensure_future(
        conn.prompt(session_id=rec.session_id, prompt=[TextContentBlock(type="text", text=text)])
    )
    if cancel:
        waiter = asyncio.ensure_future(rec.first_update.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not task.done():
            client.cancelling = True  # later permission requests: "cancelled"
            await conn.cancel(session_id=rec.session_id)
            client.turn_cancelled.set()  # held ones too, after the cancel is on the wire
    try:
        resp = await task
    except Exception as exc:  # noqa: BLE001 - recorded
        turn["error"] = _error_obj(exc)
    else:
        turn["stopReason"] = resp.stop_reason
    rec.sdk_turn = None
    rec.current = None


async def run(args: argparse.Namespace, rec: Recorder) -> dict[str, Any]:
    client = RecordingClient(rec, args.permission)
    cwd = args.cwd or tempfile.mkdtemp(prefix="py-sdk-client-")
    prompts = args.prompt or []
    if args.scenario == "cancel":
        prompts = prompts[:1] or ["wait"]
    agent = args.agent
    exit_code: int | None = None
    async with spawn_agent_process(
        client,
        agent[0],
        *agent[1:],
        env=dict(os.environ),  # the SDK's default env is trimmed to a few variables
        # stderr=None: inherit; the SDK default (PIPE) is never read and can fill up
        transport_kwargs={"stderr": None, "limit": STDIO_LIMIT, "shutdown_timeout": 3.0},
        observers=[rec.observe],
    ) as (conn, proc):
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(
                    read_text_file=args.caps != "none", write_text_file=args.caps != "none"
                ),
                terminal=args.caps == "all",
            ),
            client_info=Implementation(
                name=CLIENT_NAME, title="Python SDK client", version=SDK_VERSION
            ),
        )
        session = await conn.new_session(cwd=str(Path(cwd).resolve()), mcp_servers=[])
        rec.session_id = session.session_id
        try:
            for text in prompts:
                await _turn(conn, rec, client, text, cancel=args.scenario == "cancel")
        finally:
            await client.close()
        # let any straggling notification reach the observer
        await asyncio.sleep(0.05)
    exit_code = proc.returncode
    return rec.report(exit_code)


def parse_args(argv: list[str]) -> argparse.Namespace:
    if "--" not in argv:
        raise SystemExit("usage: py_sdk_client.py [options] -- AGENT_ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="py_sdk_client.py")
    parser.add_argument("--scenario", choices=["prompts", "cancel"], default="prompts")
    parser.add_argument("--cwd")
    parser.add_argument(
        "--permission", choices=["allow", "reject", "cancel", "hold"], default="allow"
    )
    parser.add_argument("--prompt", action="append")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--caps", choices=["all", "fs", "none"], default="fs")
    args = parser.parse_args(argv[:split])
    args.agent = argv[split + 1 :]
    if not args.agent:
        parser.error("missing agent command after --")
    return args


def main() -> int:
    args = parse_args(sys.argv[1:])
    holder: list[Recorder] = []

    async def runner() -> dict[str, Any]:
        holder.append(Recorder())  # needs a running loop (asyncio.Event)
        return await asyncio.wait_for(run(args, holder[0]), args.timeout)

    try:
        report = asyncio.run(runner())
    except Exception as exc:  # noqa: BLE001
        what = (
            f"timed out after {args.timeout}s"
            if isinstance(exc, asyncio.TimeoutError)
            else (f"{type(exc).__name__}: {exc}")
        )
        print(f"py_sdk_client: {what}", file=sys.stderr)
        if holder:
            partial = json.dumps(holder[0].report(None), ensure_ascii=False)
            print(f"py_sdk_client: partial report: {partial}", file=sys.stderr)
        return 2 if isinstance(exc, asyncio.TimeoutError) else 1
    sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
