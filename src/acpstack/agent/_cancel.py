"""Tool calls and commands a protocol v2 client may cancel (`tool_call/cancel`,
`terminal/cancel`) while the turn goes on.

Neither method has an initialize-time capability: the agent advertises
`capabilities.cancel` on a tool call (`tool_call_update`) or a terminal (`terminal_update`)
while it can be cancelled, and clears it (`null`) afterwards. Here:

- `CancelScope`: `cancel()` cancels the code inside `async with scope:` at its current
  await; the cancellation ends at the scope (it is not raised further) and `cancelled`
  says so. The turn's own cancellation (`session/cancel`) passes through it.
- `CancelRegistry` (`Session.cancels`, v2 sessions only): what the client may cancel now,
  by tool call id and by terminal id, and the live updates that advertise it.
- `CancellableTool`: the cancellation side of `ToolCallHandle` (`cancellable()`,
  `cancelled`). A cancelled tool call stays cancelled: v2 shows status `cancelled`, the
  history (v1's shape) says `failed` with `_meta["acpstack/status"]: "cancelled"`.
- `CommandControl`: how `Turn.run_command` waits for a command the agent runs itself: on
  v2 it is shown as a display terminal of its tool call, and `terminal/cancel` of it or
  `tool_call/cancel` of its tool call kill it (`CommandResult.cancelled`).

A v1 connection has neither method: its sessions have no registry, and only the turn as a
whole is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import msgspec

from acpstack.events import v1 as events_v1
from acpstack.events import v2 as events_v2
from acpstack.local import TerminalExit

if TYPE_CHECKING:
    from acpstack.agent._client_terminals import Terminals
    from acpstack.agent._session import Session
    from acpstack.agent._turn import ToolCallHandle, Turn
    from acpstack.schema import v1 as acp

Json = dict[str, Any]
Accept = Callable[[], bool]  # cancel what is registered; False: it cannot be cancelled now

EXIT_WAIT_SECONDS = 10.0
"""How long a cancelled command's exit status is waited for after it was killed."""


class CancelScope:
    """Cancel the code inside ``async with scope:`` from elsewhere, with `cancel()`.

    The code is cancelled at its current await (`asyncio.CancelledError`, so `finally`
    blocks run); the scope ends that cancellation (the code after the block goes on) and
    `cancelled` is then True. A cancellation that is not the scope's own, such as the
    turn's, passes through. A scope is entered once; `cancel()` after it ended does nothing.
    """

    def __init__(self) -> None:
        self.cancel_called: bool = False
        """Whether `cancel()` was called while the scope could still be cancelled."""
        self.cancelled: bool = False
        """Whether the code inside was cancelled by this scope and the scope ended it."""
        self._task: asyncio.Task[Any] | None = None
        self._baseline = 0
        self._state = "new"  # new, entered, exited
        self._sent = False  # task.cancel() was called for this scope

    async def __aenter__(self) -> CancelScope:
        if self._state != "new":
            raise RuntimeError("a CancelScope can be entered only once")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a CancelScope must be entered in a task")
        self._task, self._baseline, self._state = task, task.cancelling(), "entered"
        if self.cancel_called:
            self._cancel_task()
        return self

    def cancel(self) -> None:
        """Cancel the code inside the scope (at once if entered, else when it is)."""
        if self.cancel_called or self._state == "exited":
            return
        self.cancel_called = True
        if self._state == "entered":
            self._cancel_task()

    def _cancel_task(self) -> None:
        assert self._task is not None
        self._sent = True
        self._task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._state = "exited"
        if not self._sent:
            return False
        assert self._task is not None
        # As asyncio.timeout does: ours only if no other cancellation is pending.
        if self._task.uncancel() <= self._baseline and exc_type is not None:
            if issubclass(exc_type, asyncio.CancelledError):
                self.cancelled = True
                return True
        return False


class CancelRegistry:
    """What the client of one v2 session may cancel now: tool calls and terminals by id
    (each with the function that cancels it), and the live updates that say so."""

    def __init__(self, send_live: Callable[[Json], Awaitable[None]]) -> None:
        self._send = send_live
        self._tools: dict[str, Accept] = {}
        self._terminals: dict[str, Accept] = {}

    def cancel_tool(self, tool_call_id: str) -> bool:
        """Cancel a tool call's work; False when it is unknown, final or not cancellable."""
        accept = self._tools.get(tool_call_id)
        return accept is not None and accept()

    def cancel_terminal(self, terminal_id: str) -> bool:
        """Stop a terminal's command; False when it is unknown, exited or not cancellable."""
        accept = self._terminals.get(terminal_id)
        return accept is not None and accept()

    def offers_tool(self, tool_call_id: str) -> bool:
        """Whether the tool call is cancellable now."""
        return tool_call_id in self._tools

    async def offer_tool(self, tool_call_id: str, accept: Accept, **fields: Any) -> None:
        """Make the tool call cancellable and advertise it (with `fields`, v2's names)."""
        announce = self.send_tool(tool_call_id, **fields, capabilities={"cancel": {}})
        await _offer(self._tools, tool_call_id, accept, announce)

    async def withdraw_tool(self, tool_call_id: str) -> None:
        """The tool call can no longer be cancelled: say so (`capabilities: null`)."""
        if self._tools.pop(tool_call_id, None) is not None:
            with contextlib.suppress(Exception):
                await self.send_tool(tool_call_id, capabilities=None)

    async def send_tool(self, tool_call_id: str, **fields: Any) -> None:
        """A live `tool_call_update` (not recorded: it shows state of this connection)."""
        await self._send(
            {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, **fields}
        )

    async def offer_terminal(self, terminal_id: str, accept: Accept, **fields: Any) -> None:
        """Show an agent terminal (`terminal_update`) that the client may cancel."""
        announce = self.send_terminal(terminal_id, **fields, capabilities={"cancel": {}})
        await _offer(self._terminals, terminal_id, accept, announce)

    def withdraw_terminal(self, terminal_id: str) -> None:
        """The terminal can no longer be cancelled (its exit update says so)."""
        self._terminals.pop(terminal_id, None)

    async def send_terminal(self, terminal_id: str, **fields: Any) -> None:
        """A live `terminal_update`."""
        await self._send({"sessionUpdate": "terminal_update", "terminalId": terminal_id, **fields})


async def _offer(
    offers: dict[str, Accept], key: str, accept: Accept, announce: Coroutine[Any, Any, None]
) -> None:
    """Make `key` cancellable while `announce` tells the client so (the coroutine starts only
    when awaited, after the registration); undone when telling fails."""
    offers[key] = accept
    try:
        await announce
    except BaseException:
        offers.pop(key, None)
        raise


def mark_cancelled(update: acp.ToolCallUpdate) -> None:
    """A cancelled tool call's update in the runtime's model: `failed` (v1 has no
    `cancelled`) with the marker that v2 shows as status `cancelled`."""
    update.status = "failed"
    meta = dict(update.meta) if isinstance(update.meta, dict) else {}
    meta[events_v1.CANCELLED_META] = "cancelled"
    update.meta = meta


class CancellableTool:
    """The cancellation side of `ToolCallHandle` (a mixin)."""

    turn: Turn
    tool_call_id: str
    _cancelled: bool = False

    if TYPE_CHECKING:  # what ToolCallHandle provides

        async def _update(self, status: acp.ToolCallStatus) -> None: ...

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this tool call (v2 `tool_call/cancel`, see
        `cancellable`). Its status is then `cancelled` (`failed` on v1) for good: a later
        `complete()` or `fail()` still sets its content, not its status."""
        return self._cancelled

    @property
    def final(self) -> bool:
        """Whether the tool call reached a final status (completed, failed, cancelled)."""
        return self.tool_call_id not in self.turn._unfinished

    def cancellable(self) -> CancelScope:
        """A scope in which the client may cancel this tool call (protocol v2)::

            async with tool.cancellable():
                await long_work()
            if tool.cancelled:
                ...  # tell the model the user cancelled it

        While the code inside runs, the tool call advertises `capabilities.cancel`; a
        `tool_call/cancel` for it cancels that code at its current await (`finally`
        blocks run), the scope ends there without raising, the call's status becomes
        `cancelled` and `cancelled` is True; the turn goes on. On a v1 connection (no
        `tool_call/cancel`) the scope changes nothing. `Turn.run_command(tool=...)` is
        cancellable by itself."""
        return ToolCancelScope(self)

    def _mark_cancelled(self) -> None:
        self._cancelled = True


class ToolCancelScope(CancelScope):
    """The `CancelScope` of `CancellableTool.cancellable`."""

    def __init__(self, tool: CancellableTool) -> None:
        super().__init__()
        self.tool: CancellableTool = tool
        self._registry: CancelRegistry | None = None

    async def __aenter__(self) -> ToolCancelScope:
        tool = self.tool
        registry = tool.turn.session.cancels
        if registry is not None and not tool.final and not registry.offers_tool(tool.tool_call_id):
            await registry.offer_tool(tool.tool_call_id, self._accept)
            self._registry = registry
        await super().__aenter__()
        return self

    def _accept(self) -> bool:
        if self.tool.final:
            return False
        self.cancel()
        return True

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        ended = await super().__aexit__(exc_type, exc, tb)
        if self._registry is not None:
            await self._registry.withdraw_tool(self.tool.tool_call_id)
        if self.cancelled:
            self.tool._mark_cancelled()
            await self.tool._update("failed")  # shown as cancelled
        return ended


class CommandControl:
    """How `Turn.run_command` waits for a command (see the module's doc): on a v2
    connection a command the agent runs itself (`local`) is a display terminal that the
    client may cancel, and so is the tool call it runs for."""

    def __init__(
        self,
        session: Session,
        terminal_id: str,
        argv: Sequence[str],
        cwd: str | None,
        tool: ToolCallHandle | None,
        *,
        local: bool,
    ) -> None:
        self.registry: CancelRegistry | None = session.cancels if local else None
        self.terminal_id = terminal_id
        self.command_line = " ".join(argv)
        self.cwd = os.path.normpath(os.path.join(session.cwd, cwd or ""))
        self.tool = tool
        self.scope = CancelScope()
        self._shown = False
        self._tool_offered = False
        self._tool_asked = False

    async def wait(self, terminals: Terminals, timeout: float | None) -> tuple[bool, bool]:
        """Wait for the command to exit: (timed out, cancelled). A command that timed out
        or was cancelled is killed (and a cancelled one waited for, for its exit status)."""
        timed_out = False
        try:
            await self._offer()
            async with self.scope:
                try:
                    await asyncio.wait_for(terminals.wait_for_exit(self.terminal_id), timeout)
                except TimeoutError:
                    timed_out = True
        finally:
            await self._withdraw()
        cancelled = self.scope.cancelled
        if timed_out or cancelled:
            await terminals.kill(self.terminal_id)
        if cancelled:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(terminals.wait_for_exit(self.terminal_id), EXIT_WAIT_SECONDS)
            if self._tool_asked and self.tool is not None:
                self.tool._mark_cancelled()
        return timed_out, cancelled

    async def close(self, exit_status: TerminalExit | None) -> None:
        """The command ended (or was given up): its terminal's exit, cancellable no more."""
        if self.registry is None or not self._shown:
            return
        status: Json = {}
        if exit_status is not None and exit_status.exit_code is not None:
            status["exitCode"] = exit_status.exit_code
        if exit_status is not None and exit_status.signal is not None:
            status["signal"] = exit_status.signal
        with contextlib.suppress(Exception):
            await self.registry.send_terminal(
                self.terminal_id, exitStatus=status, capabilities=None
            )

    async def _offer(self) -> None:
        registry, tool = self.registry, self.tool
        if registry is None:
            return
        await registry.offer_terminal(
            self.terminal_id, self._accept_terminal, command=self.command_line, cwd=self.cwd
        )
        self._shown = True
        if tool is None or tool.final:
            return
        shown = [events_v2.tool_content_to_v2(c, True) for c in msgspec.to_builtins(tool.content)]
        content = [*(c for c in shown if c is not None)]
        content.append({"type": "terminal", "terminalId": self.terminal_id})
        if registry.offers_tool(tool.tool_call_id):  # the author's own scope has it
            await registry.send_tool(tool.tool_call_id, content=content)
            return
        await registry.offer_tool(tool.tool_call_id, self._accept_tool, content=content)
        self._tool_offered = True

    async def _withdraw(self) -> None:
        if self.registry is None:
            return
        self.registry.withdraw_terminal(self.terminal_id)
        if self._tool_offered and self.tool is not None:
            await self.registry.withdraw_tool(self.tool.tool_call_id)

    def _accept_terminal(self) -> bool:
        self.scope.cancel()
        return True

    def _accept_tool(self) -> bool:
        if self.tool is None or self.tool.final:
            return False
        self._tool_asked = True
        self.scope.cancel()
        return True


__all__ = [
    "CancelRegistry",
    "CancelScope",
    "CancellableTool",
    "CommandControl",
    "ToolCancelScope",
    "mark_cancelled",
]
