import os

from acpstack import RequestError
from acpstack.agent import SessionAgent, SqliteSessionStore, Turn, diff_content, serve_stdio
from acpstack.schema import v1 as acp

STEPS = ("Read NOTES.md", "Add the note", "Count notes")


class NotesAgent(SessionAgent):
    name = "notes-agent"

    async def prompt(self, turn: Turn) -> acp.StopReason:
        path = os.path.join(turn.session.cwd, "NOTES.md")
        await turn.plan([(STEPS[0], "in_progress"), *STEPS[1:]])
        read = await turn.start_tool("Read NOTES.md", kind="read", locations=[path])
        try:
            old = await turn.read_file(path)
        except RequestError:  # no NOTES.md yet
            old = None
        await read.complete()
        diff = [diff_content(path, old, new := (old or "") + f"- {turn.text}\n")]
        edit = await turn.start_tool("Add a note", kind="edit", locations=[path], content=diff)
        if not (await turn.request_permission(edit)).allowed:
            await edit.fail("The user declined the edit.")
            await turn.say("OK, I left NOTES.md as it was.")
            return "end_turn"
        await turn.write_file(path, new)
        await edit.complete()
        count = await turn.start_tool("wc -l NOTES.md", kind="execute")
        result = await turn.run_command("wc", ["-l", path], timeout=30, tool=count)
        await count.complete()
        await turn.plan([(step, "completed") for step in STEPS])
        await turn.say(f"Noted. NOTES.md now has {result.output.split()[0]} lines.")
        return "end_turn"


if __name__ == "__main__":
    store = SqliteSessionStore(os.environ.get("NOTES_AGENT_DB"))
    serve_stdio(NotesAgent(store=store, modes=[("ask", "Ask"), ("code", "Code")]))
