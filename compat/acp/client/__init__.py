"""`acp.client`, as upstream: the client's connection class (`acp.client.router` has the
elicitation mode conversion)."""

from acp.core import ClientSideConnection

__all__ = ["ClientSideConnection"]
