"""The method names by side, and the protocol version (the official SDK's `acp.meta`)."""

from __future__ import annotations

from acpstack.schema import method_table

PROTOCOL_VERSION = 1


def _names(handled_by: str) -> dict[str, str]:
    return {
        spec.name.replace("/", "_"): spec.name
        for spec in method_table(True)
        if spec.handled_by in (handled_by, "both") and spec.name != "$/cancel_request"
    }


AGENT_METHODS = _names("agent")
CLIENT_METHODS = _names("client")

__all__ = ["AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_VERSION"]
