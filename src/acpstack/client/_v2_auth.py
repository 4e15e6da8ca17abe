"""v2's authentication methods as the model's (v1's `AuthMethod`).

v2 names a method's id `methodId` and gives a terminal method's `env` as a list of
name/value pairs; the model has `id` and a mapping (names are unique in v2, so nothing is
lost). A method of a type the model does not know (v2's auth methods are an open union)
is left out: this client cannot log in with it (the chat names such methods from the
answer as it came)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpstack.schema import v1 as acp

if TYPE_CHECKING:
    from acpstack.schema import v2


def auth_method(method: v2.AuthMethod) -> acp.AuthMethod | None:
    """`method` in the model's shape; None for a type the model does not know."""
    from acpstack.schema import v2

    if isinstance(method, v2.AuthMethodAgent):
        return acp.AuthMethodAgent(
            id=method.method_id, name=method.name, description=method.description
        )
    if isinstance(method, v2.AuthMethodTerminal):
        terminal = acp.AuthMethodTerminal(
            id=method.method_id, name=method.name, description=method.description
        )
        if isinstance(method.args, list):
            terminal.args = list(method.args)
        if isinstance(method.env, list):
            terminal.env = {variable.name: variable.value for variable in method.env}
        return terminal
    return None


__all__ = ["auth_method"]
