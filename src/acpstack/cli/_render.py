"""How the chat shows a session: one render function per kind of `session/update`.

The `Renderer` decides what to show, and when, so that each thing is shown once: a tool
call is one line, live while it runs and printed when it is done; a diff is shown once
(with the tool call, or in the permission question, whichever comes first); a read's
file content is not repeated (the agent quotes what matters). A view does the showing:
`LiveView` on a terminal, `PlainView` on a pipe.

The updates are the version-neutral events (`acpstack.events`), whichever protocol
version the agent speaks. Adding an update kind is local: write `_on_<kind>` and add it to
`_handlers`, which must name every kind of the table `acpstack.events.UPDATE_KINDS` (a
kind added there and not here fails when a `Renderer` is made).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable
from typing import Any, Protocol

from rich.console import RenderableType
from rich.padding import Padding
from rich.syntax import Syntax
from rich.text import Text

import acpstack.events as events
from acpstack.cli._chat_children import ChildSessions, ViewSink
from acpstack.client import ClientRuntime, SessionState, ToolCallState, UpdateDispatch
from acpstack.schema import v1 as acp

STATUS_ICONS = {
    "pending": "○",
    "in_progress": "◐",
    "completed": "●",
    "failed": "✗",
    "cancelled": "⊘",
}
STATUS_STYLES = {"completed": "green", "failed": "red", "in_progress": "yellow"}
PLAN_ICONS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
FINAL = ("completed", "failed", "cancelled")
#: The plan's place among the live lines (no tool call id starts with a NUL).
PLAN_KEY = "\0plan"
#: Lines of a tool's output shown when it is done, and live while a terminal runs.
OUTPUT_TAIL = 12
LIVE_TAIL = 3


class View(Protocol):
    def message(self, text: str) -> None: ...
    def thought(self, text: str) -> None: ...
    def end_message(self) -> None: ...
    def tool_live(self, tool_call_id: str, lines: list[Text]) -> None: ...
    def tool_done(self, tool_call_id: str, renderables: list[RenderableType]) -> None: ...
    def tool_gone(self, tool_call_id: str) -> None: ...
    def print(self, *renderables: RenderableType) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def wipe_echo(self) -> None: ...
    def close(self) -> None: ...


class Renderer:
    def __init__(self, view: View, runtime: ClientRuntime, *, rich: bool) -> None:
        self.view = view
        self.runtime = runtime
        self.rich = rich  # rich renderables (colour, syntax) or plain text
        self._done_tools: set[str] = set()
        self._shown_diffs: set[str] = set()
        self._last_plan: list[tuple[str, str]] | None = None
        self._live_plan: list[Text] | None = None  # the plan redrawn in place (a terminal)
        self._session_titles: dict[str, str | None] = {}  # the title last shown per session
        self._modes: dict[str, str] = {}  # the mode last shown per session
        self._in_turn = False
        # (session, speaker, messageId) of the messages whose chunks were shown: a whole
        # message (v2) of one of them is not shown again.
        self._streamed: set[tuple[str, str, str]] = set()
        # Unstable: subagents and inter-session messages (see `_chat_children.py`).
        self.children = ChildSessions(self._state, ViewSink(view, rich=rich))
        self._handlers: UpdateDispatch[Callable[[str, Any], None]] = UpdateDispatch(
            {
                "agent_message_chunk": self._on_message,
                "agent_thought_chunk": self._on_thought,
                "user_message_chunk": self._on_user_message,
                "agent_message": self._on_whole_message,
                "agent_thought": self._on_whole_message,
                "user_message": self._on_whole_message,
                "tool_call": self._on_tool_call,
                "tool_call_update": self._on_tool_call,
                "tool_call_content_chunk": self._on_tool_call,
                "plan": self._on_plan,
                "plan_update": self._on_plan,  # the plan of type items is the plan shown
                "plan_removed": self._on_plan,
                "current_mode_update": self._on_mode,
                "session_info_update": self._on_session_info,
                "available_commands_update": self._ignore,  # feeds completion and /help
                "config_option_update": self._on_mode,  # (v2's mode is an option); /config
                "usage_update": self._ignore,  # shown by /usage and the result record
                "notice": self._on_notice,
                "compaction_update": self._on_compaction,
                "compaction_summary_chunk": self._ignore,  # the summary is the agent's business
                "subagent_update": self._ignore,  # shown by `self.children`
                "session_message": self._ignore,  # shown by `self.children`
                "session_message_chunk": self._ignore,  # shown by `self.children`
                "state_update": self._ignore,  # the turn's end is the prompt's answer
                "terminal_update": self._ignore,  # shown with its tool call
                "terminal_output_chunk": self._ignore,  # (polled: `poll_terminals`)
            },
            unknown=self._on_unknown,
        )

    def on_update(self, session_id: str, update: Any) -> None:
        self.children.on_update(session_id, update)  # also ends a message it shows live
        self._handlers.handler(update)(session_id, update)

    def begin_turn(self, *, prompted: bool = True) -> None:
        """A turn starts: the user's prompt (`prompted`), or a history being replayed."""
        self._in_turn = prompted  # the user's message now is the prompt just typed: not shown
        self._last_plan = None  # a plan the agent sends again (e.g. asked for it) is shown
        self.children.begin_turn()

    def end_turn(self, session_id: str | None) -> None:
        """Print what is still live (tool calls a cancelled turn left running) once."""
        self._in_turn = False
        self.children.end_turn()
        if self._live_plan is not None:  # its last state, printed once
            self.view.tool_done(PLAN_KEY, list(self._live_plan))
            self._live_plan = None
        session = self.runtime.sessions.get(session_id) if session_id else None
        if session is not None:
            for tool in session.state.tool_calls.values():
                if tool.tool_call_id not in self._done_tools:
                    self._tool_done(session_id or "", tool)
        self.view.close()

    def end_message(self) -> None:
        self.view.end_message()

    def skip_shown(self, session_id: str) -> None:
        """Treat the session's tool calls so far as shown (a history that was not shown)."""
        session = self.runtime.sessions.get(session_id)
        if session is not None:
            self._done_tools.update(session.state.tool_calls)
        self.children.mark_shown(session_id)

    def _state(self, session_id: str) -> SessionState | None:
        session = self.runtime.sessions.get(session_id)
        return session.state if session is not None else None

    # -- one function per update kind -------------------------------------------------------

    def _ignore(self, session_id: str, update: Any) -> None:
        pass

    def _on_message(self, session_id: str, update: events.AgentMessageChunk) -> None:
        self._chunk_seen(session_id, "agent", update)
        self._show_block(update.content, self.view.message)

    def _on_thought(self, session_id: str, update: events.AgentThoughtChunk) -> None:
        self._chunk_seen(session_id, "thought", update)
        if isinstance(update.content, acp.TextContent):
            self.view.thought(update.content.text)

    def _on_user_message(self, session_id: str, update: events.UserMessageChunk) -> None:
        """History the agent replays (session/load); in a turn, the agent's echo of the
        prompt the user just typed (v2 agents echo it), which is not shown again."""
        self._chunk_seen(session_id, "user", update)
        if isinstance(update.content, acp.TextContent) and not self._in_turn:
            self.view.print(Text("you: ", style="bold cyan") + Text(update.content.text))

    def _on_whole_message(
        self,
        session_id: str,
        update: events.AgentMessage | events.AgentThought | events.UserMessage,
    ) -> None:
        """A whole message (v2): shown when its chunks were not (say, a replayed history
        that sends messages whole); its later versions are the agent's business."""
        speaker = events.UPDATE_KINDS[events.kind_of(update)].speaker or "agent"
        key = (session_id, speaker, update.message_id)
        if key in self._streamed or not isinstance(update.content, list):
            return
        self._streamed.add(key)
        for block in update.content:
            if speaker == "agent":
                self._show_block(block, self.view.message)
            elif speaker == "thought":
                if isinstance(block, acp.TextContent):
                    self.view.thought(block.text)
            elif isinstance(block, acp.TextContent) and not self._in_turn:
                self.view.print(Text("you: ", style="bold cyan") + Text(block.text))

    def _chunk_seen(self, session_id: str, speaker: str, chunk: Any) -> None:
        if type(chunk.message_id) is str:
            self._streamed.add((session_id, speaker, chunk.message_id))

    def _show_block(self, block: Any, show: Callable[[str], None]) -> None:
        if isinstance(block, acp.TextContent):
            show(block.text)
        else:
            self.view.print(self._note(f"[{type(block).__name__} from the agent]"))

    def _on_plan(self, session_id: str, update: Any) -> None:
        """The session's plan (`SessionState.plan`, whichever update changed it). At a
        terminal the plan is redrawn in place (in the live area) and printed once when the
        turn ends; on a pipe the first plan of a turn is printed whole, then only the
        entries whose status changed (the whole plan again when its entries change)."""
        state = self._state(session_id)
        if state is None:
            return
        plan = [(entry.content, str(entry.status)) for entry in state.plan]
        if plan == self._last_plan:
            return
        previous, self._last_plan = self._last_plan, plan
        if self.rich:
            self._live_plan = self._plan_lines(plan, "plan:")
            self.view.tool_live(PLAN_KEY, self._live_plan)
        elif previous is not None and [c for c, _ in previous] == [c for c, _ in plan]:
            changed = [entry for entry, old in zip(plan, previous, strict=True) if entry != old]
            self.view.print(*self._plan_lines(changed, "plan update:"))
        else:
            self.view.print(*self._plan_lines(plan, "plan:"))

    @staticmethod
    def _plan_lines(plan: list[tuple[str, str]], heading: str) -> list[Text]:
        lines = [Text(heading, style="bold")]
        for content, status in plan:
            style = {"completed": "green", "in_progress": "yellow"}.get(status, "")
            lines.append(Text(f"  {PLAN_ICONS.get(status, '[?]')} {content}", style=style))
        if not plan:
            lines.append(Text("  (empty)", style="dim"))
        return lines

    def _on_mode(self, session_id: str, update: Any) -> None:
        """The session's mode when it changed (`current_mode_update`, or the config option
        of category mode, v2's only way to say it)."""
        state = self._state(session_id)
        mode = state.current_mode_id if state is not None else None
        if isinstance(update, events.CurrentModeUpdate):
            mode = update.current_mode_id
        if mode is not None and self._modes.get(session_id) != mode:
            self._modes[session_id] = mode
            self.view.print(Text(f"mode: {mode}", style="cyan"))

    def _on_session_info(self, session_id: str, update: events.SessionInfoUpdate) -> None:
        if isinstance(update.title, str):
            self.show_title(session_id, update.title)

    def show_title(self, session_id: str, title: str) -> None:
        """The session's title, unless it is the one shown last (`/title` and the agent's
        `session_info_update` name the same change)."""
        if self._session_titles.get(session_id) != title:
            self._session_titles[session_id] = title
            self.view.print(Text(f"session: {title}", style="dim"))

    def _on_notice(self, session_id: str, update: events.Notice) -> None:
        style = {"error": "red", "warning": "yellow"}.get(str(update.severity), "cyan")
        about = f": {update.description}" if isinstance(update.description, str) else ""
        self.view.print(Text(f"{update.severity}: {update.title}{about}", style=style))

    def _on_compaction(self, session_id: str, update: events.CompactionUpdate) -> None:
        if str(update.status) in ("completed", "failed"):
            error = f": {update.error}" if isinstance(update.error, str) else ""
            self.view.print(
                self._note(f"(the agent compacted its context: {update.status}{error})")
            )

    def _on_unknown(self, session_id: str, update: Any) -> None:
        kind = getattr(update, "session_update", "?")
        self.view.print(self._note(f"(update {kind!r} not understood by this client)"))

    def _on_tool_call(self, session_id: str, update: Any) -> None:
        session = self.runtime.sessions.get(session_id)
        tool = session.state.tool_calls.get(update.tool_call_id) if session else None
        if tool is None or tool.tool_call_id in self._done_tools:
            return
        diffs = [item for item in tool.content if isinstance(item, events.Diff)]
        shown = [self.diff(item, tool.tool_call_id) for item in diffs]
        if any(shown):
            self.view.print(*[r for r in shown if r is not None])
        if tool.status in FINAL:
            self._tool_done(session_id, tool)
        else:
            self.view.tool_live(tool.tool_call_id, self._tool_lines(session_id, tool))

    # -- tool calls --------------------------------------------------------------------------

    def _tool_line(self, tool: ToolCallState) -> Text:
        if not self.rich:
            return Text(f"[tool] {tool.title} ({tool.status})")
        icon = STATUS_ICONS.get(tool.status, "?")
        style = STATUS_STYLES.get(tool.status, "blue")
        status = tool.status.replace("_", " ")
        return Text(f"{icon} {tool.title}", style=style) + Text(
            f"  {tool.kind} · {status}", style="dim"
        )

    def _tool_lines(self, session_id: str, tool: ToolCallState) -> list[Text]:
        lines = [self._tool_line(tool)]
        output = self._terminal_output(session_id, tool)
        if output:
            lines.append(Text(_indent(_tail(output, LIVE_TAIL)), style="dim"))
        return lines

    def _tool_done(self, session_id: str, tool: ToolCallState) -> None:
        self._done_tools.add(tool.tool_call_id)
        shown: list[RenderableType] = [self._tool_line(tool)]
        output = self._terminal_output(session_id, tool) or self._text_output(tool)
        if output.strip():
            # Padded, not indented by hand: a line wrapped by the terminal stays indented.
            shown.append(Padding(Text(_tail(output, OUTPUT_TAIL), style="dim"), (0, 0, 0, 2)))
        self.view.tool_done(tool.tool_call_id, shown)

    def _terminal_output(self, session_id: str, tool: ToolCallState) -> str:
        parts = []
        for item in tool.content:
            if isinstance(item, acp.Terminal):
                snapshot = self.runtime.terminal_snapshot(session_id, item.terminal_id)
                if snapshot is not None:
                    parts.append(snapshot.output)
        return "".join(parts)

    @staticmethod
    def _text_output(tool: ToolCallState) -> str:
        if tool.kind == "read":
            return ""  # the file's content: the agent quotes what matters in its message
        texts = [
            item.content.text
            for item in tool.content
            if isinstance(item, acp.Content) and isinstance(item.content, acp.TextContent)
        ]
        return "\n".join(
            line for line in "\n".join(texts).splitlines() if not line.startswith("```")
        )

    def poll_terminals(self, session_id: str) -> None:
        """Refresh the live lines of running tools that show a terminal (called periodically)."""
        session = self.runtime.sessions.get(session_id)
        if session is None:
            return
        for tool in list(session.state.tool_calls.values()):
            if tool.tool_call_id in self._done_tools or tool.status in FINAL:
                continue
            if any(isinstance(item, acp.Terminal) for item in tool.content):
                self.view.tool_live(tool.tool_call_id, self._tool_lines(session_id, tool))

    # -- diffs and permission questions --------------------------------------------------

    def diff(self, diff: events.Diff | acp.Diff, owner: str) -> RenderableType | None:
        """The diff to show, or None when it was shown already: v1's old and new text as
        a unified diff, or v2's patch as it came."""
        patch = getattr(diff, "patch", None)  # (v2's; a permission request's diff is v1's)
        patch = patch if isinstance(patch, dict) else None
        key = hashlib.sha256(
            f"{owner}\0{diff.path}\0{diff.old_text}\0{diff.new_text}\0{patch}".encode()
        ).hexdigest()
        if key in self._shown_diffs:
            return None
        self._shown_diffs.add(key)
        if isinstance(diff.new_text, str) and isinstance(diff.path, str):
            old = diff.old_text if isinstance(diff.old_text, str) else ""
            lines = difflib.unified_diff(
                old.splitlines(keepends=True),
                diff.new_text.splitlines(keepends=True),
                fromfile=diff.path if isinstance(diff.old_text, str) else "/dev/null",
                tofile=diff.path,
            )
            text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        elif patch is not None and isinstance(patch.get("text"), str):
            text = patch["text"]
        else:
            changes = getattr(diff, "changes", None)
            text = "".join(
                f"{c.get('operation', '?')} {c.get('path', '?')}\n"
                for c in (changes if isinstance(changes, list) else [])
                if isinstance(c, dict)
            )
        text = text or "(no change)\n"
        if not self.rich:
            return Text(text.rstrip("\n"))
        return Syntax(
            text.rstrip("\n"), "diff", theme="ansi_dark", background_color="default", word_wrap=True
        )

    def permission(self, request: acp.RequestPermissionRequest, keys: list[str]) -> None:
        """Show a permission question: the tool, its diff (unless shown), the options by key."""
        tool = request.tool_call
        title = tool.title if isinstance(tool.title, str) else "the agent wants to act"
        shown: list[RenderableType] = [Text(f"permission requested: {title}", style="bold magenta")]
        content: Any = tool.content
        for item in content if isinstance(content, list) else []:
            if isinstance(item, acp.Diff | events.Diff):
                rendered = self.diff(item, tool.tool_call_id)
                if rendered is not None:
                    shown.append(rendered)
        for key, option in zip(keys, request.options, strict=False):
            shown.append(Text(f"  [{key}] {option.name}", style="bold") + _scope(option))
        self.view.print(*shown)

    def _note(self, text: str) -> Text:
        return Text(text, style="dim")


#: What an option's kind adds to its name, in words (the raw kinds read like code).
OPTION_SCOPES = {
    "allow_once": "this time",
    "allow_always": "from now on",
    "reject_once": "this time",
    "reject_always": "from now on",
}


def _scope(option: acp.PermissionOption) -> Text:
    """ " (from now on)" after an option's name, unless the name says it already."""
    scope = OPTION_SCOPES.get(str(option.kind), "")
    name = option.name.lower()
    if not scope or any(word in name for word in ("always", "once", "this time", "now on")):
        return Text()
    return Text(f" ({scope})", style="dim")


def _tail(text: str, lines: int) -> str:
    parts = text.rstrip("\n").splitlines()
    if len(parts) <= lines:
        return "\n".join(parts)
    return "…\n" + "\n".join(parts[-lines:])


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
