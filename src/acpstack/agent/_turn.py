"""What an agent author uses inside a prompt turn instead of writing JSON.

`Turn` streams messages, thoughts, plans and tool calls, asks permission, runs commands
in a client terminal and reads/writes files through the client. Every update goes
through the session, which records it in the store before it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from msgspec import UNSET

from acpstack.agent._turn_extras import ClientCapabilityMissing, TurnExtras
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError

if TYPE_CHECKING:
    from acpstack.agent._session import Session

Decision = Literal["allow", "reject", "cancelled"]

STANDARD_OPTIONS = (
    acp.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    acp.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    acp.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    acp.PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)


@dataclass(frozen=True)
class PermissionDecision:
    """The client's answer. Anything but a selected allow option counts as not allowed."""

    decision: Decision
    option_id: str | None = None
    always: bool = False

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


@dataclass(frozen=True)
class CommandResult:
    output: str
    truncated: bool
    exit_code: int | None
    signal: str | None
    timed_out: bool
    terminal_id: str


def text_content(text: str) -> acp.Content:
    return acp.Content(content=acp.TextContent(text=text))


def diff_content(path: str, old_text: str | None, new_text: str) -> acp.Diff:
    """A diff for a file edit; `old_text=None` means a new file."""
    return acp.Diff(path=path, old_text=old_text, new_text=new_text)


def terminal_content(terminal_id: str) -> acp.Terminal:
    return acp.Terminal(terminal_id=terminal_id)


class ToolCallHandle:
    """One tool call of a turn: start it, stream progress, then complete or fail it."""

    def __init__(self, turn: Turn, tool_call_id: str, title: str, kind: acp.ToolKind) -> None:
        self.turn = turn
        self.tool_call_id = tool_call_id
        self.title = title
        self.kind = kind
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
        await self._update(
            "in_progress", content=content, title=title, locations=locations, raw_output=raw_output
        )

    async def complete(
        self, *, content: Sequence[acp.ToolCallContent] | None = None, raw_output: Any = UNSET
    ) -> None:
        await self._update("completed", content=content, raw_output=raw_output)

    async def fail(self, message: str | None = None, *, raw_output: Any = UNSET) -> None:
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
        await self.turn.session.send(update)


class Turn(TurnExtras):
    """One `session/prompt`: the prompt, and the helpers to answer it (notices, compaction
    and elicitation helpers: `TurnExtras`)."""

    def __init__(self, session: Session, prompt: list[acp.ContentBlock]) -> None:
        self.session = session
        self.prompt = prompt
        self.message_id = uuid.uuid4().hex
        self._thought_id = uuid.uuid4().hex
        self._tool_ids = itertools.count(1)

    @property
    def text(self) -> str:
        """The prompt's text blocks joined (the usual way to read a prompt)."""
        return "".join(b.text for b in self.prompt if isinstance(b, acp.TextContent))

    @property
    def client(self) -> Any:
        return self.session.client

    # -- streaming ------------------------------------------------------------------

    async def say(self, text: str) -> None:
        """Stream part of the agent's message (chunks of one turn share a messageId)."""
        await self.session.send(
            acp.AgentMessageChunk(content=acp.TextContent(text=text), message_id=self.message_id)
        )

    async def think(self, text: str) -> None:
        await self.session.send(
            acp.AgentThoughtChunk(content=acp.TextContent(text=text), message_id=self._thought_id)
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
        await self.session.send(call)
        return handle

    # -- permission -----------------------------------------------------------------

    async def request_permission(
        self,
        tool: ToolCallHandle | acp.ToolCallUpdate,
        options: Sequence[acp.PermissionOption] = STANDARD_OPTIONS,
    ) -> PermissionDecision:
        """Ask the user. Only a selected option of an allow kind counts as approval."""
        tool_call = tool.as_update() if isinstance(tool, ToolCallHandle) else tool
        params = acp.RequestPermissionRequest(
            session_id=self.session.session_id, tool_call=tool_call, options=list(options)
        )
        answer = await self.session.client.session_request_permission(params)
        outcome = answer.outcome
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

    # -- client resources -------------------------------------------------------------

    async def read_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        params = acp.ReadTextFileRequest(session_id=self.session.session_id, path=path)
        if line is not None:
            params.line = line
        if limit is not None:
            params.limit = limit
        try:
            result = await self.session.client.fs_read_text_file(params)
        except CapabilityError as exc:
            raise ClientCapabilityMissing(
                "the client does not allow reading files (fs.readTextFile)"
            ) from exc
        content: str = result.content
        return content

    async def write_file(self, path: str, content: str) -> None:
        params = acp.WriteTextFileRequest(
            session_id=self.session.session_id, path=path, content=content
        )
        try:
            await self.session.client.fs_write_text_file(params)
        except CapabilityError as exc:
            raise ClientCapabilityMissing(
                "the client does not allow writing files (fs.writeTextFile)"
            ) from exc

    async def run_command(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        output_byte_limit: int | None = None,
        tool: ToolCallHandle | None = None,
    ) -> CommandResult:
        """Run a command in a client terminal: create, wait (or kill on timeout), output, release.

        The terminal is released even when waiting fails or the turn is cancelled. With
        `tool`, the terminal is embedded in that tool call (before release, as ACP asks).
        """
        client = self.session.client
        sid = self.session.session_id
        params = acp.CreateTerminalRequest(session_id=sid, command=command, args=list(args))
        if cwd is not None:
            params.cwd = cwd
        if env:
            params.env = [acp.EnvVariable(name=k, value=v) for k, v in env.items()]
        if output_byte_limit is not None:
            params.output_byte_limit = output_byte_limit
        try:
            created = await client.terminal_create(params)
        except CapabilityError as exc:
            raise ClientCapabilityMissing("the client does not offer terminals (terminal)") from exc
        tid = created.terminal_id
        timed_out = False
        try:
            if tool is not None:
                await tool.progress(content=[terminal_content(tid)])
            wait = client.terminal_wait_for_exit(
                acp.WaitForTerminalExitRequest(session_id=sid, terminal_id=tid)
            )
            try:
                await asyncio.wait_for(wait, timeout)
            except TimeoutError:
                timed_out = True
                await client.terminal_kill(acp.KillTerminalRequest(session_id=sid, terminal_id=tid))
            out = await client.terminal_output(
                acp.TerminalOutputRequest(session_id=sid, terminal_id=tid)
            )
        finally:
            with contextlib.suppress(Exception):
                # Shielded: a cancelled turn still frees the terminal.
                await asyncio.shield(
                    client.terminal_release(
                        acp.ReleaseTerminalRequest(session_id=sid, terminal_id=tid)
                    )
                )
        status = out.exit_status if isinstance(out.exit_status, acp.TerminalExitStatus) else None
        return CommandResult(
            output=out.output,
            truncated=out.truncated,
            exit_code=status.exit_code
            if status is not None and isinstance(status.exit_code, int)
            else None,
            signal=status.signal if status is not None and isinstance(status.signal, str) else None,
            timed_out=timed_out,
            terminal_id=tid,
        )


__all__ = [
    "STANDARD_OPTIONS",
    "ClientCapabilityMissing",
    "CommandResult",
    "PermissionDecision",
    "ToolCallHandle",
    "Turn",
    "diff_content",
    "terminal_content",
    "text_content",
]
