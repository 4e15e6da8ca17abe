"""Broken: ignores session/cancel and $/cancel_request (a waiting turn never ends)."""

from typing import Any

from raw_agent import RawAgent, main


class HangsOnCancel(RawAgent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


main(HangsOnCancel)
