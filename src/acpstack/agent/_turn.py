"""What an agent author uses inside a prompt turn instead of writing JSON.

`Turn` streams messages, thoughts, plans and tool calls, asks permission, runs commands
in a client terminal and reads/writes files through the client. Every update goes
through the session, which records it in the store before it is sent.

When the client does not offer `fs` or `terminal`, the file and command helpers follow
the turn's `fallback` policy: ``"local"`` does the work in the agent's process inside the
session's roots (see `_local_access`), ``"refuse"`` raises `ClientCapabilityMissing`
(and fails the helper's tool call first). Permission is never asked by the helpers
themselves: the caller asks before a write or a command, whichever side does the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from msgspec import UNSET

import acpstack.events as events
from acpstack.agent._cancel import CancellableTool, CommandControl, mark_cancelled
from acpstack.agent._client_terminals import ClientTerminals, Terminals
from acpstack.agent._local_access import Fallback, LocalAccess
from acpstack.agent._session import new_id
from acpstack.agent._turn_extras import ClientCapabilityMissing, TurnExtras
from acpstack.local import TerminalOutput
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError

if TYPE_CHECKING:
    from acpstack.agent._agent import ClientPeer
    from acpstack.agent._session import Session

Decision = Literal["allow", "reject", "cancelled"]

STANDARD_OPTIONS = (
    acp.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    acp.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    acp.PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)


SHOWN_OUTPUT_CHARS = 64_000
"""How much of a local command's output its tool call shows (the end of it)."""


@dataclass(frozen=True)
class PermissionDecision:
    """The client's answer. Anything but a selected allow option counts as not allowed."""

    decision: Decision
    option_id: str | None = None
    always: bool = False

    @property
    def allowed(self) -> bool:
        """Whether the user chose an allow option."""
        return self.decision == "allow"


@dataclass(frozen=True)
class CommandResult:
    """How a command ended. `terminal_id` is the client terminal's id, or "" when the
    command ran in the agent's process (the client offers no terminals). `cancelled`: the
    client stopped it (v2 `terminal/cancel`, or `tool_call/cancel` of its tool call)."""

    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None
    timed_out: bool
    terminal_id: str
    cancelled: bool = False


def text_content(text: str) -> acp.Content:
    """Text as tool call content."""
    return acp.Content(content=acp.TextContent(text=text))


def diff_content(path: str, old_text: str | None, new_text: str) -> acp.Diff:
    """A diff for a file edit; `old_text=None` means a new file."""
    return acp.Diff(path=path, old_text=old_text, new_text=new_text)


def terminal_content(terminal_id: str) -> acp.Terminal:
    """A client terminal embedded in a tool call (the client shows its live output)."""
    return acp.Terminal(terminal_id=terminal_id)


def output_content(result: CommandResult) -> acp.Content:
    """A command's output and how it ended, as text (for a command with no client terminal)."""
    output = result.output
    if len(output) > SHOWN_OUTPUT_CHARS:
        hidden = len(output) - SHOWN_OUTPUT_CHARS
        output = f"[... {hidden} characters not shown]\n" + output[-SHOWN_OUTPUT_CHARS:]
    fence = "```"
    while fence in output:
        fence += "`"
    if output and not output.endswith("\n"):
        output += "\n"
    if result.exit_code is not None:
        status = f"exit code {result.exit_code}"
    elif result.signal is not None:
        status = f"killed by {result.signal}"
    else:
        status = "ended"
    if result.timed_out:
        status += " (timed out)"
    if result.cancelled:
        status += " (cancelled)"
    if result.truncated:
        status += "; the beginning of the output was dropped (output limit)"
    return text_content(f"{fence}\n{output}{fence}\n{status}")


class ToolCallHandle(CancellableTool):
    """One tool call of a turn: start it, stream progress, then complete or fail it (on
    protocol v2, the client may cancel it inside `cancellable()` and `Turn.run_command`)."""

    def __init__(self, turn: Turn, tool_call_id: str, title: str, kind: acp.ToolKind) -> None:
        self.turn: Turn = turn
        self.tool_call_id: str = tool_call_id
        self.title: str = title
        self.kind: acp.ToolKind = kind
        self.content: list[acp.ToolCallContent] = []
        self.locations: list[acp.ToolCallLocation] = []

    def as_update(self) -> acp.ToolCallUpdate:
        """The tool call as a permission request shows it (with its diff and locations)."""
        update = acp.ToolCallUpdate(
            tool_call_id=self.tool_call_id, title=self.title, kind=self.kind
        )
        if self.content:
            update.content = list(self.content)
        if self.locations:
            update.locations = list(self.locations)
        return update

    async def progress(
        self,
        *,
        content: Sequence[acp.ToolCallContent] | None = None,
        title: str | None = None,
        locations: Sequence[acp.ToolCallLocation] | None = None,
        raw_output: Any = UNSET,
    ) -> None:
        """Mark the call `in_progress`; what is given replaces the call's content, title,
        locations or raw output (what is left out keeps its value)."""
        await self._update(
            "in_progress", content=content, title=title, locations=locations, raw_output=raw_output
        )

    async def complete(
        self, *, content: Sequence[acp.ToolCallContent] | None = None, raw_output: Any = UNSET
    ) -> None:
        """Mark the call `completed`, with its final content and raw output if given."""
        await self._update("completed", content=content, raw_output=raw_output)

    async def fail(self, message: str | None = None, *, raw_output: Any = UNSET) -> None:
        """Mark the call `failed`; `message` becomes its content (shown to the user)."""
        content = [text_content(message)] if message else None
        await self._update("failed", content=content, raw_output=raw_output)

    async def _update(
        self,
        status: acp.ToolCallStatus,
        *,
        content: Sequence[acp.ToolCallContent] | None = None,
        title: str | None = None,
        locations: Sequence[acp.ToolCallLocation] | None = None,
        raw_output: Any = UNSET,
    ) -> None:
        update = acp.SessionUpdateToolCallUpdate(tool_call_id=self.tool_call_id, status=status)
        if content is not None:
            update.content = self.content = list(content)
        if title is not None:
            update.title = self.title = title
        if locations is not None:
            update.locations = self.locations = list(locations)
        if raw_output is not UNSET:
            update.raw_output = raw_output
        if self.cancelled:  # for good (v2 shows `cancelled`, see _cancel.py)
            mark_cancelled(update)
        self.turn._track(self, "failed" if self.cancelled else status)
        await self.turn.session.send(update)


class Turn(TurnExtras):
    """One `session/prompt`: the prompt, and the helpers to answer it (notices, compaction
    and elicitation helpers: `TurnExtras`)."""

    def __init__(
        self,
        session: Session,
        prompt: list[acp.ContentBlock],
        *,
        fallback: Fallback = "local",
        local: LocalAccess | None = None,
    ) -> None:
        """`fallback`: what the file and command helpers do when the client does not offer
        `fs` or `terminal` (``"local"`` or ``"refuse"``); it may be changed during the
        turn. `local`: the session's `LocalAccess` (the runtime passes it); without one the
        turn makes its own when needed, and `aclose` ends it."""
        if fallback not in get_args(Fallback):
            raise ValueError(f"fallback must be 'local' or 'refuse', not {fallback!r}")
        self.session: Session = session
        self.prompt: list[acp.ContentBlock] = prompt
        self.fallback: Fallback = fallback
        self.message_id: str = new_id()
        self._thought_id: str | None = None  # made by the first `think`
        self._tool_ids = itertools.count(1)
        self._local = local
        self._own_local: LocalAccess | None = None
        self._unfinished: dict[str, ToolCallHandle] = {}

    @property
    def text(self) -> str:
        """The prompt's text blocks joined (the usual way to read a prompt)."""
        return "".join(b.text for b in self.prompt if isinstance(b, acp.TextContent))

    @property
    def client(self) -> ClientPeer:
        """The handle to the client (the session's), for calls the helpers do not cover."""
        return self.session.client

    # -- streaming ------------------------------------------------------------------

    async def say(self, text: str) -> None:
        """Stream part of the agent's message (chunks of one turn share a messageId)."""
        await self.session.send(
            events.AgentMessageChunk(content=acp.TextContent(text=text), message_id=self.message_id)
        )

    async def think(self, text: str) -> None:
        """Stream part of the agent's thoughts (chunks of one turn share a messageId)."""
        thought_id = self._thought_id
        if thought_id is None:
            thought_id = self._thought_id = new_id()
        await self.session.send(
            events.AgentThoughtChunk(content=acp.TextContent(text=text), message_id=thought_id)
        )

    async def plan(
        self, entries: Sequence[acp.PlanEntry | tuple[str, acp.PlanEntryStatus] | str]
    ) -> None:
        """Send the whole plan. Entries: PlanEntry, (content, status) or plain text (pending)."""
        items = []
        for entry in entries:
            if isinstance(entry, acp.PlanEntry):
                items.append(entry)
            elif isinstance(entry, tuple):
                items.append(acp.PlanEntry(content=entry[0], status=entry[1], priority="medium"))
            else:
                items.append(acp.PlanEntry(content=entry, status="pending", priority="medium"))
        await self.session.send(acp.Plan(entries=items))

    async def usage(self, used: int, size: int, *, cost: acp.Cost | None = None) -> None:
        """Report the context window: `used` of `size` tokens, and the session's cost so
        far if known (`usage_update`)."""
        update = acp.UsageUpdate(used=used, size=size)
        if cost is not None:
            update.cost = cost
        await self.session.send(update)

    # -- tool calls -----------------------------------------------------------------

    async def start_tool(
        self,
        title: str,
        *,
        kind: acp.ToolKind = "other",
        locations: Sequence[acp.ToolCallLocation | str] = (),
        raw_input: Any = UNSET,
        content: Sequence[acp.ToolCallContent] = (),
        status: acp.ToolCallStatus = "pending",
    ) -> ToolCallHandle:
        """Announce a tool call (`tool_call`, `pending` unless `status` says otherwise);
        `locations` may be paths. Update it through the handle it returns."""
        handle = ToolCallHandle(self, f"{self.message_id[:8]}-{next(self._tool_ids)}", title, kind)
        call = acp.ToolCall(tool_call_id=handle.tool_call_id, title=title, kind=kind, status=status)
        if locations:
            handle.locations = [
                loc if isinstance(loc, acp.ToolCallLocation) else acp.ToolCallLocation(path=loc)
                for loc in locations
            ]
            call.locations = list(handle.locations)
        if raw_input is not UNSET:
            call.raw_input = raw_input
        if content:
            handle.content = list(content)
            call.content = list(content)
        self._track(handle, status)
        await self.session.send(call)
        return handle

    def _track(self, tool: ToolCallHandle, status: acp.ToolCallStatus) -> None:
        if status in ("completed", "failed"):
            self._unfinished.pop(tool.tool_call_id, None)
        else:
            self._unfinished[tool.tool_call_id] = tool

    async def cancel_unfinished(self, message: str = "Cancelled.") -> None:
        """Mark every tool call of this turn that is neither completed nor failed as
        cancelled (the runtime does this when a turn is cancelled): `cancelled` on protocol
        v2, `failed` with the cancelled marker on v1, which has no such status."""
        for tool in list(self._unfinished.values()):
            update = acp.SessionUpdateToolCallUpdate(
                tool_call_id=tool.tool_call_id, status="failed", content=[text_content(message)]
            )
            mark_cancelled(update)
            self._unfinished.pop(tool.tool_call_id, None)
            await self.session.send(update)

    async def fail_unfinished(self, message: str) -> None:
        """Fail every tool call of this turn that is neither completed nor failed (the
        runtime does this when a turn ends on an error, so none is left pending)."""
        for tool in list(self._unfinished.values()):
            await tool.fail(message)

    # -- permission -----------------------------------------------------------------

    async def request_permission(
        self,
        tool: ToolCallHandle | acp.ToolCallUpdate,
        options: Sequence[acp.PermissionOption] = STANDARD_OPTIONS,
    ) -> PermissionDecision:
        """Ask the user. Only a selected option of an allow kind counts as approval; an
        error answer (-32601 from a client without a permission handler, or any other)
        or an invalid one is a refusal ("reject"), logged as a warning."""
        tool_call = tool.as_update() if isinstance(tool, ToolCallHandle) else tool
        outcome = await self.session.ask_permission(tool_call, list(options))
        if isinstance(outcome, acp.SelectedPermissionOutcome):
            chosen = next((o for o in options if o.option_id == outcome.option_id), None)
            if chosen is None:  # an id we never offered: never approval
                return PermissionDecision("reject", outcome.option_id)
            allowed = chosen.kind in ("allow_once", "allow_always")
            return PermissionDecision(
                "allow" if allowed else "reject", chosen.option_id, chosen.kind.endswith("always")
            )
        if isinstance(outcome, acp.CancelledRequestPermissionOutcome):
            # A client answers "cancelled" only because it cancelled the turn: the turn ends
            # as cancelled even if our session/cancel notification has not been read yet.
            self.session.cancel_requested = True
            return PermissionDecision("cancelled")
        return PermissionDecision("reject")

    # -- files and commands -----------------------------------------------------------

    async def read_file(
        self,
        path: str,
        *,
        line: int | None = None,
        limit: int | None = None,
        tool: ToolCallHandle | None = None,
    ) -> str:
        """Read a text file through the client, or (client without `fs.readTextFile`) as
        the `fallback` policy says. With `tool`, a refusal fails that tool call first."""
        params = acp.ReadTextFileRequest(session_id=self.session.session_id, path=path)
        if line is not None:
            params.line = line
        if limit is not None:
            params.limit = limit
        await self.session.flush()  # the client has every update before it is asked
        try:
            result = await self.session.client.fs_read_text_file(params)
        except CapabilityError:
            local = await self._without("fs.readTextFile", f"Cannot read {path}", "reads", tool)
            return await local.read_text_file(path, line, limit)
        content: str = result.content
        return content

    async def write_file(
        self, path: str, content: str, *, tool: ToolCallHandle | None = None
    ) -> None:
        """Write a text file through the client, or (client without `fs.writeTextFile`) as
        the `fallback` policy says. Ask permission before calling this."""
        params = acp.WriteTextFileRequest(
            session_id=self.session.session_id, path=path, content=content
        )
        await self.session.flush()
        try:
            await self.session.client.fs_write_text_file(params)
        except CapabilityError:
            local = await self._without("fs.writeTextFile", f"Cannot write {path}", "writes", tool)
            await local.write_text_file(path, content)

    async def run_command(
        self,
        command: str,
        args: list[str] | tuple[str, ...] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        output_byte_limit: int | None = None,
        tool: ToolCallHandle | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> CommandResult:
        """Run a command to its end: create, wait (or kill on timeout), output, release.

        In a client terminal when the client offers them, else as the `fallback` policy
        says (locally: in the session's cwd or `cwd` inside its roots, in its own process
        group, with the same timeout and output limit). The command is ended and freed
        even when waiting fails or the turn is cancelled. With `tool`, a client terminal
        is embedded in that tool call (before release, as ACP asks); a local command's
        output is shown there as text when it ends. On protocol v2 such a command is a
        display terminal the client may cancel (`terminal/cancel`), as it may cancel the
        `tool` call (`tool_call/cancel`): the command is then killed and the result says
        `cancelled` (and a cancelled tool call stays `cancelled`). `redact` rewrites the
        output before it is shown or returned (e.g. to mask secrets it may print; a client
        terminal shows the client's own copy). Ask permission before calling this.
        """
        if not isinstance(args, list | tuple):  # a str would run as one argument per letter
            raise TypeError(f"args must be a list of str, not {type(args).__name__}")
        await self.session.flush()
        client_side = ClientTerminals(self.session.client, self.session.session_id)
        terminals: Terminals = client_side
        try:
            tid = await client_side.create(
                command, args, cwd=cwd, env=env, output_byte_limit=output_byte_limit
            )
        except CapabilityError:
            shown = shlex.join([command, *args])
            terminals = await self._without("terminal", f"Cannot run `{shown}`", "runs", tool)
            tid = await terminals.create(
                command, args, cwd=cwd, env=env, output_byte_limit=output_byte_limit
            )
        local = terminals is not client_side
        control = CommandControl(self.session, tid, [command, *args], cwd, tool, local=local)
        out: TerminalOutput | None = None
        try:
            if tool is not None:
                await tool.progress(content=None if local else [terminal_content(tid)])
            timed_out, cancelled = await control.wait(terminals, timeout)
            out = await terminals.output(tid)
        finally:
            with contextlib.suppress(Exception):
                # Shielded: a cancelled turn still ends and frees the command.
                await asyncio.shield(terminals.release(tid))
            await control.close(out.exit_status if out is not None else None)
        assert out is not None
        status = out.exit_status
        result = CommandResult(
            output=redact(out.output) if redact is not None else out.output,
            truncated=out.truncated,
            exit_code=status.exit_code if status is not None else None,
            signal=status.signal if status is not None else None,
            timed_out=timed_out,
            terminal_id="" if local else tid,
            cancelled=cancelled,
        )
        if local and tool is not None:
            await tool.progress(content=[output_content(result)])
        return result

    async def _without(
        self, capability: str, action: str, verb: str, tool: ToolCallHandle | None
    ) -> LocalAccess:
        """The client does not offer `capability`: the local access, or the refusal."""
        if self.fallback == "refuse":
            what = "commands" if capability == "terminal" else "files"
            error = ClientCapabilityMissing(
                f"{action}: the client does not offer `{capability}`, and this agent {verb} "
                f"{what} only through the client"
            )
            if tool is not None:
                await tool.fail(error.message)
            raise error
        if self._local is None:
            session = self.session
            self._local = self._own_local = LocalAccess(
                session.session_id, session.cwd, session.additional_directories
            )
        return self._local

    async def aclose(self) -> None:
        """End the commands of a `LocalAccess` this turn made itself (none when the
        runtime passed the session's)."""
        if self._own_local is not None:
            await self._own_local.aclose()


__all__ = [
    "STANDARD_OPTIONS",
    "ClientCapabilityMissing",
    "CommandResult",
    "PermissionDecision",
    "ToolCallHandle",
    "Turn",
    "diff_content",
    "output_content",
    "terminal_content",
    "text_content",
]
