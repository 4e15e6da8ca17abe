"""A call's params go from the method's arguments to acpstack's struct without the request
model when that is certain to give the same struct (acp._outbound); everything else takes
the plain way through the model, which raises pydantic's error as the official SDK does.
Each case here compares the two ways, or checks that the fast one declines."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema as s
from acp._bridge import to_kwargs, to_wire
from acp._outbound import params_struct
from acp.core import _model
from pydantic import BaseModel, ValidationError

from acpstack.schema import method_table

SPECS = {spec.name: spec for spec in method_table(True)}


def plain(method: str, model: Any, fields: dict[str, Any], extras: dict[str, Any]) -> Any:
    return to_wire(_model(model, fields, extras), SPECS[method].params)


def fast(method: str, model: Any, fields: dict[str, Any], extras: dict[str, Any]) -> Any:
    return params_struct(model, SPECS[method].params, fields, extras)


TEXT = s.TextContentBlock(type="text", text="hello", annotations=s.Annotations(priority=0.5))
LINK = s.ResourceContentBlock(type="resource_link", uri="file:///a", name="a", size=12)
EMBEDDED = s.EmbeddedResourceContentBlock(
    type="resource",
    resource=s.TextResourceContents(uri="file:///b", text="b", mime_type="text/plain"),
    field_meta={"k": [1, 2]},
)
TOOL_CALL = s.ToolCallUpdate(
    tool_call_id="t1",
    title="run",
    status="pending",
    content=[s.ContentToolCallContent(type="content", content=TEXT)],
)
OPTIONS = [s.PermissionOption(option_id="ok", name="Allow", kind="allow_once")]

SAME = [
    ("session/prompt", s.PromptRequest, {"session_id": "s1", "prompt": [TEXT, LINK, EMBEDDED]}),
    ("session/prompt", s.PromptRequest, {"session_id": "s1", "prompt": []}),
    (
        "session/new",
        s.NewSessionRequest,
        {
            "cwd": "/tmp",
            "mcp_servers": [s.McpServerStdio(name="m", command="x", args=["-v"], env=[])],
            "additional_directories": None,
        },
    ),
    (
        "initialize",
        s.InitializeRequest,
        {
            "protocol_version": 1,
            "client_capabilities": s.ClientCapabilities(
                fs=s.FileSystemCapabilities(read_text_file=True), terminal=False
            ),
            "client_info": None,
        },
    ),
    (
        "session/request_permission",
        s.RequestPermissionRequest,
        {"session_id": "s1", "tool_call": TOOL_CALL, "options": OPTIONS},
    ),
    (
        "fs/read_text_file",
        s.ReadTextFileRequest,
        {"session_id": "s1", "path": "/a", "line": 3, "limit": None},
    ),
    ("terminal/kill", s.KillTerminalRequest, {"session_id": "s1", "terminal_id": "t"}),
]


@pytest.mark.parametrize(("method", "model", "fields"), SAME)
def test_the_fast_way_makes_the_struct_the_model_makes(
    method: str, model: Any, fields: dict[str, Any]
) -> None:
    made = fast(method, model, fields, {})
    assert made is not None, "expected the fast way to take these arguments"
    assert made == plain(method, model, fields, {})
    assert type(made) is SPECS[method].params


DECLINED = [
    # _meta members: serialized by pydantic's JSON mode, which the plain way keeps
    ("session/prompt", s.PromptRequest, {"session_id": "s1", "prompt": [TEXT]}, {"trace": 1}),
    # a block given as a dict: the model validates it
    (
        "session/prompt",
        s.PromptRequest,
        {"session_id": "s1", "prompt": [{"type": "text", "text": "x"}]},
        {},
    ),
    # a number pydantic coerces ("3" -> 3 in lax mode), which msgspec refuses
    (
        "fs/read_text_file",
        s.ReadTextFileRequest,
        {"session_id": "s1", "path": "/a", "line": "3"},
        {},
    ),
    # a float: its JSON is pydantic's own business
    (
        "session/prompt",
        s.PromptRequest,
        {"session_id": "s1", "prompt": [TEXT, 1.5]},
        {},
    ),
    # a keyword the model does not have (the model ignores it)
    ("session/prompt", s.PromptRequest, {"session_id": "s1", "prompt": [], "bogus": 1}, {}),
]


@pytest.mark.parametrize(("method", "model", "fields", "extras"), DECLINED)
def test_what_the_fast_way_is_not_sure_of_takes_the_plain_way(
    method: str, model: Any, fields: dict[str, Any], extras: dict[str, Any]
) -> None:
    assert fast(method, model, fields, extras) is None
    try:
        plain(method, model, fields, extras)  # the plain way decides, as it always did
    except ValidationError:
        pass


class Lookalike(BaseModel):
    """Not a content block, though its JSON is one."""

    type: str = "text"
    text: str


def test_a_model_of_a_class_the_field_does_not_list_is_refused_as_before() -> None:
    for block in (Lookalike(text="x"), TOOL_CALL):
        fields = {"session_id": "s1", "prompt": [block]}
        assert fast("session/prompt", s.PromptRequest, fields, {}) is None
        with pytest.raises(ValidationError):
            _model(s.PromptRequest, fields, {})


def test_invalid_arguments_still_raise_pydantics_error() -> None:
    fields = {"session_id": 5, "prompt": [TEXT]}
    assert fast("session/prompt", s.PromptRequest, fields, {}) is None
    with pytest.raises(ValidationError):
        _model(s.PromptRequest, fields, {})


def by_fields(model: Any) -> dict[str, Any]:
    """The keyword arguments as the official SDK makes them: every field by name, `_meta`'s
    members as extras."""
    kwargs = {
        name: getattr(model, name) for name in type(model).model_fields if name != "field_meta"
    }
    kwargs.update(model.field_meta or {})
    return kwargs


def test_to_kwargs_gives_every_field_and_metas_members() -> None:
    request = s.PromptRequest(session_id="s1", prompt=[TEXT], field_meta={"a": 1, "b": None})
    assert to_kwargs(request) == {"session_id": "s1", "prompt": [TEXT], "a": 1, "b": None}
    bare = s.NewSessionRequest.model_validate({"cwd": "/", "mcpServers": []})
    assert to_kwargs(bare) == by_fields(bare)
    assert "additional_directories" in to_kwargs(bare)  # unset fields too, as their default
    # a catch-all variant keeps members it does not know; they are not keyword arguments
    other = s.CreateOtherElicitationRequest.model_validate(
        {"mode": "future", "message": "m", "sessionId": "s1", "extra": 1}
    )
    kwargs = to_kwargs(other)
    assert kwargs == by_fields(other)
    assert "extra" not in kwargs
