"""The offline brain: no model, honest about it, and still exercising the whole protocol.

It works on the user's real workspace through the client: lists and reads files, proposes
an edit as a diff and asks permission, runs commands in a client terminal, keeps a plan.
For a client that offers no file access or no terminals it does that work itself, inside
the session's roots (the `Turn` helpers' "local" fallback), with the same permissions.
Slash commands: /help, /plan, /run CMD (a shell command line), /read FILE, /edit FILE OLD NEW, and for the MCP
servers the client passed: /tools, /mcp SERVER TOOL {json arguments}.
In "ask" mode it only reads (and runs only read-only MCP tools); in "code" mode it edits
and runs commands (after permission). Attached resources and images are acknowledged.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys

from acpstack.agent import (
    ClientCapabilityMissing,
    CommandResult,
    Turn,
    diff_content,
    text_content,
)
from acpstack.cli._mcp_tools import describe_tools, mcp_tools, run_mcp_tool
from acpstack.cli._prompt_content import describe, read_prompt
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

INTRO = (
    "I am acpstack's scripted offline agent: no language model is configured, so my answers "
    "follow a fixed script (run `acpstack agent --model NAME` to use a real model). I still do "
    "real work in your workspace: reading files, proposing edits, running commands.\n\n"
)

HELP = """Commands:
- `/help`: this text
- `/plan`: show the current plan
- `/read FILE`: read a file
- `/run CMD`: run a command line with `sh -c` (code mode, after permission)
- `/edit FILE OLD NEW`: replace the first OLD with NEW in FILE, shown as a diff (code mode, after permission)
- `/tools`: list the tools of the session's MCP servers
- `/mcp SERVER TOOL {json}`: call an MCP tool (after permission, unless the server marks it read-only)

A greeting or a question gets a short answer (I have no model to think with). Anything else
is a task: I look around the workspace, read its README, propose a small edit and run the tests.
"""

GREETING = (
    "Hello! Give me a task (for example: add a line about the tests to the notes) and I will "
    "look around the workspace, propose an edit and run the tests; `/help` lists my commands."
)

QUESTION = (
    "I cannot answer questions: I am the scripted offline agent, with no language model "
    "(`acpstack agent --model NAME` uses one). What I can do:\n\n"
)

GREETING_WORDS = {
    "hi", "hello", "hey", "hallo", "hola", "bonjour", "howdy", "yo", "greetings",
    "thanks", "thank", "thx", "morning", "evening", "afternoon", "good", "there",
    "you", "again", "agent", "all", "everyone",
}  # fmt: skip
QUESTION_WORDS = ("what", "why", "how", "who", "whom", "whose", "where", "when", "which")
REQUEST_OPENINGS = ("can you", "could you", "would you", "will you", "please")


COMMANDS = [
    ("help", "Show what this agent can do", None),
    ("plan", "Show the current plan", None),
    ("read", "Read a file", "FILE"),
    ("run", "Run a command in a terminal", "COMMAND"),
    ("edit", "Replace text in a file (shown as a diff)", "FILE OLD NEW"),
    ("tools", "List the tools of the session's MCP servers", None),
    ("mcp", "Call an MCP tool", "SERVER TOOL {json arguments}"),
]


class ScriptedBrain:
    def __init__(self, *, images: bool = False) -> None:
        self.images = images

    async def respond(self, turn: Turn) -> acp.StopReason:
        state = turn.session.state
        if not state.get("introduced"):
            state["introduced"] = True
            await turn.say(INTRO)
        _content, attachments = await read_prompt(turn, images=self.images)
        if attachments:
            await turn.say(f"You attached:\n{describe(attachments)}\n\n")
        text = turn.text.strip()
        if not text and attachments:
            return "end_turn"
        if text.startswith("/"):
            return await self._command(turn, text)
        kind = kind_of(text)
        if kind == "greeting":
            await turn.say(GREETING)
        elif kind == "question":
            await turn.say(QUESTION + HELP)
        else:
            return await self._explore(turn, text)
        return "end_turn"

    # -- slash commands ---------------------------------------------------------------

    async def _command(self, turn: Turn, text: str) -> acp.StopReason:
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        if name == "help":
            await turn.say(HELP)
        elif name == "plan":
            plan = turn.session.state.get("plan")
            if plan:
                await turn.plan(plan)
                await turn.say("Here is the current plan.")
            else:
                await turn.say("There is no plan yet: send me a task.")
        elif name == "read" and rest:
            await self._read(turn, rest, show=True)
        elif name == "run" and rest:
            if await self._code_mode(turn):
                await self._run(turn, rest)
        elif name == "tools":
            await turn.say(describe_tools(await mcp_tools(turn.session)))
        elif name == "mcp" and rest:
            await self._mcp(turn, rest)
        elif name == "edit":
            try:
                path, old, new = shlex.split(rest)
            except ValueError:
                await turn.say("Usage: `/edit FILE OLD NEW` (quote words with spaces).")
                return "end_turn"
            if await self._code_mode(turn):
                await self._edit(turn, path, old, new)
        else:
            await turn.say(f"Unknown or incomplete command `/{name}`.\n\n{HELP}")
        return "end_turn"

    async def _mcp(self, turn: Turn, rest: str) -> None:
        server, _, rest = rest.partition(" ")
        tool_name, _, raw_args = rest.strip().partition(" ")
        try:
            args = json.loads(raw_args) if raw_args.strip() else {}
        except ValueError as exc:
            await turn.say(
                f'The arguments are not valid JSON ({exc}). Usage: `/mcp SERVER TOOL {{"name": value}}`.'
            )
            return
        if not isinstance(args, dict):
            await turn.say('The arguments must be a JSON object, e.g. `{"a": 1}`.')
            return
        index = await mcp_tools(turn.session)
        tool = index.find(server, tool_name)
        if tool is None:
            await turn.say(
                f"There is no MCP tool `{tool_name}` on server `{server}`.\n\n{describe_tools(index)}"
            )
            return
        if not tool.read_only and not await self._code_mode(turn):
            return
        result = await run_mcp_tool(turn, tool, args)
        await turn.say(f"`{server}` `{tool_name}`:\n\n```\n{result}\n```\n")

    async def _code_mode(self, turn: Turn) -> bool:
        if turn.session.mode_id == "ask":
            await turn.say(
                "I am in **ask** mode, which only reads. Switch to **code** mode to let me edit files or run commands."
            )
            return False
        return True

    # -- the scripted task ------------------------------------------------------------

    async def _explore(self, turn: Turn, task: str) -> acp.StopReason:
        plan: list[tuple[str, acp.PlanEntryStatus]] = [
            ("List the workspace", "in_progress"),
            ("Read the README", "pending"),
            ("Propose an edit", "pending"),
            ("Run the tests", "pending"),
        ]
        await self._set_plan(turn, plan)
        await turn.think(f"The task is {task!r}. I will look at the workspace first.")
        listing = await self._run(turn, "ls -1", quiet=True)
        files = listing.output.split() if listing is not None else []
        await self._advance(turn, plan, 0)
        readme = next((f for f in files if f.lower().startswith("readme")), None)
        content = await self._read(turn, readme, show=False) if readme else None
        await self._advance(turn, plan, 1)
        if turn.session.mode_id == "ask":
            await turn.say(
                f"I looked at {len(files)} entries. In **ask** mode I stop here; switch to **code** mode and I will also edit and test."
            )
            return "end_turn"
        target = readme or "NOTES.md"
        line = f"\n- {task}\n"
        await self._edit(turn, target, None, line, current=content)
        await self._advance(turn, plan, 2)
        has_tests = any(f.startswith("test") and f.endswith(".py") for f in files)
        test_cmd = f"{shlex.quote(sys.executable)} -m unittest -v" if has_tests else "ls -la"
        result = await self._run(
            turn, test_cmd, title="Run the tests (python -m unittest)" if has_tests else None
        )
        await self._advance(turn, plan, 3)
        summary = f"Done. I read `{target}`, proposed adding your task to it"
        if result is not None:
            summary += (
                f", and ran the tests (exit code {result.exit_code})."
                if has_tests
                else f", and ran `{test_cmd}`."
            )
        await turn.say(summary)
        return "end_turn"

    async def _set_plan(self, turn: Turn, plan: list[tuple[str, acp.PlanEntryStatus]]) -> None:
        turn.session.state["plan"] = list(plan)
        await turn.plan(plan)

    async def _advance(
        self, turn: Turn, plan: list[tuple[str, acp.PlanEntryStatus]], done: int
    ) -> None:
        plan[done] = (plan[done][0], "completed")
        if done + 1 < len(plan):
            plan[done + 1] = (plan[done + 1][0], "in_progress")
        await self._set_plan(turn, plan)

    # -- tools ----------------------------------------------------------------------

    def _abs(self, turn: Turn, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(turn.session.cwd, path)

    async def _read(self, turn: Turn, path: str, *, show: bool) -> str | None:
        full = self._abs(turn, path)
        tool = await turn.start_tool(f"Read {path}", kind="read", locations=[full])
        try:
            content = await turn.read_file(full, tool=tool)
        except (RequestError, ClientCapabilityMissing) as err:
            if isinstance(err, RequestError):  # a refusal failed the tool call already
                await tool.fail(err.message)
            await turn.say(f"I could not read `{path}`: {err.message}\n")
            return None
        await tool.complete(content=[text_content(content[:2000])])
        if show:
            await turn.say(f"`{path}`:\n\n```\n{content}\n```\n")
        return content

    async def _edit(
        self, turn: Turn, path: str, old: str | None, new: str, *, current: str | None = None
    ) -> None:
        full = self._abs(turn, path)
        if current is None:
            try:
                current = await turn.read_file(full)
            except RequestError:
                current = None
            except ClientCapabilityMissing as err:
                await turn.say(f"I cannot edit `{path}`: {err.message}\n")
                return
        if old is None:  # append
            updated = (current or "") + new
        elif current is None or old not in current:
            await turn.say(f"`{old}` does not occur in `{path}`: nothing to edit.")
            return
        else:
            updated = current.replace(old, new, 1)
        tool = await turn.start_tool(
            f"Edit {path}",
            kind="edit",
            locations=[full],
            content=[diff_content(full, current, updated)],
        )
        decision = await turn.request_permission(tool)
        if not decision.allowed:
            await tool.fail("The edit was not approved.")
            await turn.say(f"I left `{path}` unchanged ({decision.decision}).")
            return
        try:
            await turn.write_file(full, updated, tool=tool)
        except (RequestError, ClientCapabilityMissing) as err:
            if isinstance(err, RequestError):  # a refusal failed the tool call already
                await tool.fail(err.message)
            await turn.say(f"I could not write `{path}`: {err.message}\n")
            return
        await tool.complete(content=[diff_content(full, current, updated)])
        await turn.say(f"Edited `{path}`.\n")

    async def _run(
        self, turn: Turn, command_line: str, *, quiet: bool = False, title: str | None = None
    ) -> CommandResult | None:
        if not command_line.strip():
            return None
        # Through a shell, as typed: the title shows exactly what `sh -c` runs.
        argv = ["sh", "-c", command_line]
        title = title or f"Run `{command_line}`"
        tool = await turn.start_tool(
            title, kind="execute" if not quiet else "search", raw_input={"command": argv}
        )
        if not quiet:
            decision = await turn.request_permission(tool)
            if not decision.allowed:
                await tool.fail("The command was not approved.")
                await turn.say(f"I did not run it ({decision.decision}).")
                return None
        try:
            result = await turn.run_command(
                argv[0],
                argv[1:],
                cwd=turn.session.cwd,
                timeout=60,
                output_byte_limit=64_000,
                tool=tool,
            )
        except (RequestError, ClientCapabilityMissing) as err:
            if isinstance(err, RequestError):  # a refusal failed the tool call already
                await tool.fail(err.message)
            await turn.say(f"`{command_line}` could not start: {err.message}\n")
            return None
        status = "completed" if result.exit_code == 0 else "failed"
        content = [text_content(f"```\n{result.output[-4000:]}\n```")]
        if status == "completed":
            await tool.complete(content=content, raw_output={"exitCode": result.exit_code})
        else:
            await tool.fail(raw_output={"exitCode": result.exit_code, "signal": result.signal})
        if not quiet:
            await turn.say(f"The command {_how_it_ended(result)}.\n")
        return result


def kind_of(text: str) -> str:
    """ "greeting", "question" or "task": only a task runs the routine (a client that cannot
    take the agent's requests should still get an answer to "hello")."""
    words = re.findall(r"[a-z']+", text.lower())
    if not words or all(word in GREETING_WORDS for word in words):
        return "greeting"
    opening = " ".join(words[:2])
    if any(opening.startswith(request) for request in REQUEST_OPENINGS):
        return "task"  # a task asked politely
    if text.rstrip().endswith("?") or words[0] in QUESTION_WORDS:
        return "question"
    return "task"


def _how_it_ended(result: CommandResult) -> str:
    if result.cancelled:
        return "was cancelled before it finished"
    if result.timed_out:
        return "timed out and was stopped"
    if result.exit_code is None:
        return f"was killed by {result.signal}"
    return f"exited with code {result.exit_code}"
