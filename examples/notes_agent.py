"""Plan, permission, an edit as a diff, a terminal command; sessions persist in SQLite."""

import os

from acpstack import RequestError
from acpstack.agent import SessionAgent, SqliteSessionStore, Turn, diff_content, serve_stdio


class NotesAgent(SessionAgent):
    name = "notes-agent"

    async def prompt(self, turn: Turn) -> str:
        path = os.path.join(turn.session.cwd, "NOTES.md")
        await turn.plan([("Read NOTES.md", "in_progress"), ("Add the note", "pending"), ("Count notes", "pending")])
        read = await turn.start_tool("Read NOTES.md", kind="read", locations=[path])
        try:
            old = await turn.read_file(path)
        except RequestError:  # no NOTES.md yet
            old = None
        await read.complete()
        new = (old or "") + f"- {turn.text}\n"
        edit = await turn.start_tool("Add a note", kind="edit", locations=[path], content=[diff_content(path, old, new)])
        if not (await turn.request_permission(edit)).allowed:
            await edit.fail("The user declined the edit.")
            await turn.say("OK, I left NOTES.md as it was.")
            return "end_turn"
        await turn.write_file(path, new)
        await edit.complete()
        await turn.plan([("Read NOTES.md", "completed"), ("Add the note", "completed"), ("Count notes", "in_progress")])
        count = await turn.start_tool("wc -l NOTES.md", kind="execute")
        result = await turn.run_command("wc", ["-l", path], timeout=30, tool=count)
        await count.complete()
        await turn.plan([("Read NOTES.md", "completed"), ("Add the note", "completed"), ("Count notes", "completed")])
        await turn.say(f"Noted. NOTES.md now has {result.output.split()[0]} lines.")
        return "end_turn"


if __name__ == "__main__":
    serve_stdio(NotesAgent(store=SqliteSessionStore(os.environ.get("NOTES_AGENT_DB")), modes=[("ask", "Ask"), ("code", "Code")]))
