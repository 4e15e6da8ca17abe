"""The base of every schema model: the official SDK's pydantic conventions."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel as _PydanticModel
from pydantic import ConfigDict

_UPPER = re.compile(r"(?<=[a-z0-9])([A-Z])")


class BaseModel(_PydanticModel):
    """Fields are snake_case with the wire's camelCase as alias; both spellings construct.

    Reading an attribute by its camelCase name also works, as it does in the official SDK
    (`update.sessionUpdate`)."""

    # (The official SDK also reads the fields' docstrings into the models; that parses the
    # module's source at import, over a second here, so the layer leaves them as comments.)
    model_config = ConfigDict(populate_by_name=True)

    def __getattr__(self, item: str) -> Any:
        if item.lower() != item and not item.startswith("__"):
            return getattr(self, _UPPER.sub(r"_\1", item).lower())
        return super().__getattr__(item)  # type: ignore[misc]
