"""Every ACP type as a pydantic model, under the official SDK's names.

The models are generated (`_generated_schema.py`); the few names below are unions that the
official SDK 0.12 names and the schema does not."""

from typing import Annotated, Any, Literal, Union

from pydantic import Field

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
from acp._model import BaseModel

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


# The `env_var` authentication method of 0.12 (schema v1.19), which left the schema: code
# that names it still imports and builds it, but the wire's `AuthMethod` no longer has it,
# so an `InitializeResponse` drops it from `auth_methods` (invalid items are skipped there).
class AuthEnvVar(BaseModel):
    name: str
    label: str | None = None
    secret: bool | None = True
    optional: bool | None = False


class AuthMethodEnvVar(BaseModel):
    id: str
    name: str
    description: str | None = None
    vars: list[AuthEnvVar]
    link: str | None = None
    field_meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


class EnvVarAuthMethod(AuthMethodEnvVar):
    type: Literal["env_var"] = "env_var"


__all__ = [  # noqa: PLE0604
    *_generated,
    "AuthEnvVar",
    "AuthMethodEnvVar",
    "EnvVarAuthMethod",
    "CreateFormElicitationRequest",
    "CreateUrlElicitationRequest",
    "ElicitationMode",
    "FileSystemCapability",
    "KillTerminalCommandRequest",
    "KillTerminalCommandResponse",
]
