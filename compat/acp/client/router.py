"""How an `elicitation/create` request reaches `Client.create_elicitation(message, mode)`:
the mode object is the request without its message, of the class for its variant."""

from __future__ import annotations

from typing import Any

from acp import _generated_schema as s
from acp.exceptions import RequestError

__all__: list[str] = []

_MODE_OF: dict[type, type] = {
    s.CreateFormSessionElicitationRequest: s.ElicitationFormSessionMode,
    s.CreateFormRequestElicitationRequest: s.ElicitationFormRequestMode,
    s.CreateUrlSessionElicitationRequest: s.ElicitationUrlSessionMode,
    s.CreateUrlRequestElicitationRequest: s.ElicitationUrlRequestMode,
}


def _mode_from_create_elicitation_request(request: Any) -> Any:
    """The mode of `request`; a mode the layer does not know (the schema's catch-all
    variant) is refused as invalid params, not left to fail as an internal error."""
    mode_class = _MODE_OF.get(type(request))
    if mode_class is None:
        raise RequestError.invalid_params(
            {"details": f"unsupported elicitation mode {request.mode!r}"}
        )
    return mode_class(**{name: getattr(request, name) for name in mode_class.model_fields})
