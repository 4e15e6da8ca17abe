"""A SessionAgent on stdio with unstable methods on, whose sessions persist in the SQLite
file named by $CHILDREN_STORE (so a second process can load them). Prompts:

- `delegate`: a child "Worker" announced running, a message to it in two parts, the child
  waiting for the user, then idle (end_turn); then "delegated";
- `open`: a child "Watcher" announced running (and left running), "watching", then a
  message from the child in two parts as the turn's last update;
- anything else: echoed.

`session/set_title` stores the title without a `session_info_update` (the client has only
the answer to show). Bad days on demand: with CHILDREN_AUTH_STATUS=fail `auth/status`
answers an error; with CHILDREN_MAX_SESSIONS=N `session/new` fails after N sessions.
"""

from __future__ import annotations

import os

from acpstack import RequestError
from acpstack.agent import SessionAgent, SqliteSessionStore, Turn, serve_stdio
from acpstack.schema import v1 as acp
from acpstack.schema import v1_unstable as acpu


class ChildrenAgent(SessionAgent):
    made = 0

    async def session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        self.made += 1
        if self.made > int(os.environ.get("CHILDREN_MAX_SESSIONS", "1000")):
            raise RequestError(-32603, "Internal error: no more sessions today")
        return await super().session_new(params)

    async def auth_status(self, params: acpu.AuthStatusRequest) -> acpu.AuthStatusResponse:
        if os.environ.get("CHILDREN_AUTH_STATUS") == "fail":
            raise RequestError(-32603, "Internal error: the key ring is locked")
        return await super().auth_status(params)

    async def session_set_title(
        self, params: acpu.SetSessionTitleRequest
    ) -> acpu.SetSessionTitleResponse:
        title = " ".join(params.title.split())
        self.store.update(params.session_id, title=title)
        return acpu.SetSessionTitleResponse(title=title)

    async def prompt(self, turn: Turn) -> acp.StopReason:
        main = turn.session.session_id
        if turn.text == "delegate":
            child = await turn.subagent(title="Worker")
            message = await turn.session_message(
                sender_session_id=main, recipient_session_id=child.session_id, text="Do X."
            )
            await message.chunk(" Then Y.")
            await child.requires_action()
            await child.idle("end_turn")
            await turn.say("delegated")
        elif turn.text == "open":
            child = await turn.subagent(title="Watcher")
            await turn.say("watching")
            message = await turn.session_message(
                sender_session_id=child.session_id, recipient_session_id=main, text="first words"
            )
            await message.chunk(" last words")
        else:
            await turn.say(f"echo: {turn.text}")
        return "end_turn"


if __name__ == "__main__":
    store = SqliteSessionStore(os.environ["CHILDREN_STORE"])
    serve_stdio(ChildrenAgent(store=store), unstable=True)
