"""Broken: answers requests for unknown methods with -32603 instead of -32601, and
answers unknown notifications with an error."""

from typing import Any

from raw_agent import RawAgent, main


class NoMethodNotFound(RawAgent):
    async def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if getattr(self, "do_" + method.replace("/", "_"), None) is None or method.startswith("_"):
            self.error(rid, -32603, "internal error")
            return
        await super().handle(rid, method, params)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith(("_", "acpstack")):
            self.error(None, -32601, f"unknown notification {method}")
            return
        super().on_notification(method, params)


main(NoMethodNotFound)
