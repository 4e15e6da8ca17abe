"""Every ACP type as a pydantic model, under the official SDK's names.

The models are generated (`_generated_schema.py`); the few names below are unions that the
official SDK 0.12 names and the schema does not."""

from typing import Union

from acp._generated_schema import *  # noqa: F403
from acp._generated_schema import (
    CreateFormRequestElicitationRequest,
    CreateFormSessionElicitationRequest,
    CreateUrlRequestElicitationRequest,
    CreateUrlSessionElicitationRequest,
    ElicitationFormRequestMode,
    ElicitationFormSessionMode,
    ElicitationUrlRequestMode,
    ElicitationUrlSessionMode,
    FileSystemCapabilities,
    KillTerminalRequest,
    KillTerminalResponse,
)
from acp._generated_schema import __all__ as _generated

ElicitationMode = Union[
    ElicitationFormSessionMode,
    ElicitationFormRequestMode,
    ElicitationUrlSessionMode,
    ElicitationUrlRequestMode,
]
CreateFormElicitationRequest = Union[
    CreateFormSessionElicitationRequest, CreateFormRequestElicitationRequest
]
CreateUrlElicitationRequest = Union[
    CreateUrlSessionElicitationRequest, CreateUrlRequestElicitationRequest
]

# Names of earlier releases (0.8) for the same types.
KillTerminalCommandRequest = KillTerminalRequest
KillTerminalCommandResponse = KillTerminalResponse
FileSystemCapability = FileSystemCapabilities

__all__ = [  # noqa: PLE0604
    *_generated,
    "CreateFormElicitationRequest",
    "CreateUrlElicitationRequest",
    "ElicitationMode",
    "FileSystemCapability",
    "KillTerminalCommandRequest",
    "KillTerminalCommandResponse",
]
