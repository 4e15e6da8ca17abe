"""How the chat client shows a session: streaming Markdown, thoughts, tool calls, plans."""

from __future__ import annotations

import difflib
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from acpstack.client import ClientRuntime
from acpstack.schema import UnknownSessionUpdate
from acpstack.schema import v1 as acp

STATUS_ICONS = {"pending": "○", "in_progress": "◐", "completed": "●", "failed": "✗"}
PLAN_ICONS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class Renderer:
    """Renders session/update streams to a rich Console (one per chat)."""

    def __init__(self, console: Console, runtime: ClientRuntime, *, markdown: bool = True) -> None:
        self.console = console
        self.runtime = runtime
        self.markdown = markdown
        self._live: Live | None = None
        self._text = ""
        self._thinking = False
        self._tool_status: dict[str, str] = {}
        self._terminal_shown: dict[str, int] = {}
        self._last_plan: list[tuple[str, str]] | None = None

    # -- message streaming ------------------------------------------------------------

    def _stream(self, chunk: str) -> None:
        if self._thinking:
            self.console.print()
            self._thinking = False
        self._text += chunk
        if not self.console.is_terminal:
            return  # no live redraw on a pipe: the message is printed whole by end_message
        renderable = Markdown(self._text) if self.markdown else Text(self._text)
        if self._live is None:
            self._live = Live(
                renderable, console=self.console, refresh_per_second=12, transient=False
            )
            self._live.start()
        else:
            self._live.update(renderable)

    def end_message(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self._text:
            self.console.print(Markdown(self._text) if self.markdown else Text(self._text))
        self._text = ""
        if self._thinking:
            self.console.print()
            self._thinking = False

    def _think(self, chunk: str) -> None:
        if self._live is not None:
            self.end_message()
        if not self._thinking:
            self.console.print(Text("thinking: ", style="dim italic"), end="")
            self._thinking = True
        self.console.print(Text(chunk, style="dim italic"), end="")

    # -- updates ------------------------------------------------------------------------

    def on_update(self, session_id: str, update: acp.SessionUpdate | UnknownSessionUpdate) -> None:
        if isinstance(update, acp.AgentMessageChunk):
            if isinstance(update.content, acp.TextContent):
                self._stream(update.content.text)
            return
        if isinstance(update, acp.AgentThoughtChunk):
            if isinstance(update.content, acp.TextContent):
                self._think(update.content.text)
            return
        if isinstance(update, acp.UserMessageChunk):
            return  # our own prompt (or replayed history, shown by /load)
        self.end_message()
        if isinstance(update, acp.ToolCall | acp.ToolCallUpdate):
            self._tool(session_id, update.tool_call_id)
        elif isinstance(update, acp.Plan):
            self._plan(update.entries)
        elif isinstance(update, acp.CurrentModeUpdate):
            self.console.print(Text(f"mode: {update.current_mode_id}", style="cyan"))
        elif isinstance(update, acp.SessionInfoUpdate):
            if isinstance(update.title, str):
                self.console.print(Text(f"session: {update.title}", style="dim"))
        elif isinstance(update, acp.UsageUpdate):
            pass  # shown on demand; too noisy inline
        elif isinstance(update, acp.AvailableCommandsUpdate | acp.ConfigOptionUpdate):
            pass  # feeds completion and /config
        elif isinstance(update, UnknownSessionUpdate):
            self.console.print(
                Text(
                    f"(update {update.session_update!r} not understood by this client)", style="dim"
                )
            )

    def _tool(self, session_id: str, tool_call_id: str) -> None:
        session = self.runtime.sessions.get(session_id)
        if session is None:
            return
        tool = session.state.tool_calls.get(tool_call_id)
        if tool is None:
            return
        previous = self._tool_status.get(tool_call_id)
        if previous == tool.status and tool.status != "in_progress":
            return
        self._tool_status[tool_call_id] = tool.status
        style = {"completed": "green", "failed": "red", "in_progress": "yellow"}.get(
            tool.status, "blue"
        )
        if previous != tool.status:
            self.console.print(
                Text(f"{STATUS_ICONS.get(tool.status, '?')} {tool.title}", style=style),
                Text(f" [{tool.kind}] {tool.status}", style="dim"),
            )
        for item in tool.content:
            if isinstance(item, acp.Diff) and previous is None:
                self.show_diff(item)
            elif isinstance(item, acp.Terminal):
                self._terminal(session_id, item.terminal_id)
            elif (
                isinstance(item, acp.Content)
                and tool.status in ("completed", "failed")
                and previous != tool.status
            ):
                if isinstance(item.content, acp.TextContent) and item.content.text.strip():
                    body = "\n".join(
                        line
                        for line in item.content.text.splitlines()
                        if not line.startswith("```")
                    )
                    self.console.print(Text(_tail(body, 12), style="dim"))

    def show_diff(self, diff: acp.Diff) -> None:
        old = diff.old_text if isinstance(diff.old_text, str) else ""
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            diff.new_text.splitlines(keepends=True),
            fromfile=diff.path if diff.old_text else "/dev/null",
            tofile=diff.path,
        )
        text = "".join(lines) or "(no change)\n"
        self.console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))

    def _terminal(self, session_id: str, terminal_id: str) -> None:
        snapshot = self.runtime.terminal_snapshot(session_id, terminal_id)
        if snapshot is None:
            return
        shown = self._terminal_shown.get(terminal_id, 0)
        new = snapshot.output[shown:] if shown <= len(snapshot.output) else snapshot.output
        if new.strip():
            self.console.print(Text(_tail(new, 20), style="dim"))
        self._terminal_shown[terminal_id] = len(snapshot.output)

    def poll_terminals(self, session_id: str) -> None:
        """Show new output of the session's running terminals (called periodically)."""
        session = self.runtime.sessions.get(session_id)
        if session is None:
            return
        for tool in session.state.tool_calls.values():
            if tool.status in ("completed", "failed"):
                continue
            for item in tool.content:
                if isinstance(item, acp.Terminal):
                    if self._live is not None:
                        self.end_message()
                    self._terminal(session_id, item.terminal_id)

    def _plan(self, entries: list[acp.PlanEntry]) -> None:
        plan: list[tuple[str, str]] = [(e.content, str(e.status)) for e in entries]
        if plan == self._last_plan:
            return
        self._last_plan = plan
        self.console.print(Text("plan:", style="bold"))
        for content, status in plan:
            style = (
                "green" if status == "completed" else "yellow" if status == "in_progress" else ""
            )
            self.console.print(Text(f"  {PLAN_ICONS.get(status, '[?]')} {content}", style=style))

    def show_permission(self, request: acp.RequestPermissionRequest) -> None:
        self.end_message()
        title = (
            request.tool_call.title
            if isinstance(request.tool_call.title, str)
            else "the agent wants to act"
        )
        self.console.print(Text(f"permission requested: {title}", style="bold magenta"))
        content: Any = request.tool_call.content
        for item in content if isinstance(content, list) else []:
            if isinstance(item, acp.Diff):
                self.show_diff(item)
        for index, option in enumerate(request.options, 1):
            self.console.print(Text(f"  [{index}] {option.name} ({option.kind})"))


def _tail(text: str, lines: int) -> str:
    parts = text.rstrip("\n").splitlines()
    if len(parts) <= lines:
        return "\n".join(parts)
    return "…\n" + "\n".join(parts[-lines:])
