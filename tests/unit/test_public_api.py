"""The public API, pinned: each public package's `__all__` is written out here (sorted the
way ruff's RUF022 sorts: CONSTANTS, then Classes, then the rest), every name in it resolves,
and every public class and function carries a docstring. A change to the public API is a
change to this file, made on purpose (as httpx's tests/test_exported_members.py does).

Public packages are the ones under src/acpstack whose names do not start with `_`; the
generated schema modules (`acpstack.schema.v1`, ...) are checked by the codegen instead.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import acpstack

SOURCE = Path(acpstack.__file__).resolve().parent
# (The checkout's docs: the package may be an installed build, e.g. `./run test-mypyc`'s.)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "reference"
# A build compiled with mypyc keeps no docstrings in its compiled modules.
COMPILED = not (importlib.import_module("acpstack.wire._connection").__file__ or "").endswith(".py")

PUBLIC_API: dict[str, list[str]] = {
    "acpstack": [
        "PROTOCOL_VERSION",
        "UNSET",
        "Agent",
        "AgentPeer",
        "CapabilityError",
        "Client",
        "ClientConnection",
        "ClientPeer",
        "Connection",
        "ConnectionClosed",
        "ProtocolVersionError",
        "RequestError",
        "RequestTimeout",
        "__version__",
        "connect_agent",
        "connect_client",
        "run",
        "run_agent",
        "serve_stdio",
        "spawn_agent",
    ],
    "acpstack.agent": [
        "SESSION_BUSY",
        "STANDARD_OPTIONS",
        "Agent",
        "CancelScope",
        "ClientCapabilityMissing",
        "ClientPeer",
        "CommandResult",
        "Compaction",
        "ElicitationAnswer",
        "Fallback",
        "InterSessionMessage",
        "LocalAccess",
        "McpConnections",
        "McpServerError",
        "McpTool",
        "McpToolResult",
        "MemorySessionStore",
        "PermissionDecision",
        "PostgresSessionStore",
        "ProviderSettings",
        "Session",
        "SessionAgent",
        "SessionBusy",
        "SessionChanges",
        "SessionLeases",
        "SessionRecord",
        "SessionStore",
        "SqliteSessionStore",
        "StoredEvent",
        "Subagent",
        "ToolCallHandle",
        "Turn",
        "connect_agent",
        "default_store_path",
        "diff_content",
        "observe_store_batches",
        "open_store",
        "output_content",
        "run_agent",
        "serve_stdio",
        "terminal_content",
        "text_content",
    ],
    "acpstack.cli": [
        "EXIT_USAGE",
        "build_parser",
        "main",
    ],
    "acpstack.client": [
        "UPDATE_KINDS",
        "AgentPeer",
        "AskElicitation",
        "AskUser",
        "Client",
        "ClientConnection",
        "ClientRuntime",
        "ClientSession",
        "DeclineElicitations",
        "DenyAll",
        "ElicitationPolicy",
        "ElicitationReply",
        "ElicitationRule",
        "ElicitationRules",
        "Failover",
        "FailoverEvent",
        "FailoverTransport",
        "FileSystem",
        "Message",
        "PermissionPolicy",
        "ProtocolVersionError",
        "Rule",
        "Rules",
        "SessionState",
        "TerminalExit",
        "TerminalManager",
        "TerminalOutput",
        "ToolCallState",
        "UpdateDispatch",
        "UpdateKind",
        "Workspace",
        "connect_client",
        "connect_http",
        "connect_remote",
        "connect_websocket",
        "is_connection_lost",
        "reattach_session",
        "reconnect",
        "spawn_agent",
        "update_kind",
    ],
    "acpstack.conformance": [
        "GROUPS",
        "AgentTarget",
        "Answer",
        "Case",
        "CaseResult",
        "CheckOptions",
        "ClientCheckAgent",
        "Frame",
        "Level",
        "MessageValidator",
        "Probe",
        "Reply",
        "Report",
        "Responder",
        "Rule",
        "SchemaUnavailable",
        "TargetUnavailable",
        "Verdict",
        "Violation",
        "all_cases",
        "check_agent",
        "header",
        "render_json",
        "render_junit",
        "render_tail",
        "render_text",
        "result_line",
        "select_cases",
        "serve_client_check",
        "unknown_selectors",
    ],
    "acpstack.proxy": ["ChainEnded", "Conductor", "Proxy", "conduct_stdio", "load_proxy", "tool"],
    "acpstack.events": [
        "ALL_KINDS",
        "EVENT_TYPES",
        "UPDATE_KINDS",
        "AgentMessage",
        "AgentMessageChunk",
        "AgentThought",
        "AgentThoughtChunk",
        "AvailableCommandsUpdate",
        "CompactionSummaryChunk",
        "CompactionUpdate",
        "ConfigOptionUpdate",
        "CurrentModeUpdate",
        "Diff",
        "Event",
        "EventStruct",
        "KnownEvent",
        "MessageIds",
        "Notice",
        "Plan",
        "PlanEntry",
        "PlanRemoved",
        "PlanUpdate",
        "SessionInfoUpdate",
        "SessionMessage",
        "SessionMessageChunk",
        "SessionNotification",
        "Speaker",
        "Stability",
        "StateUpdate",
        "SubagentUpdate",
        "TerminalOutputChunk",
        "TerminalUpdate",
        "ToolCall",
        "ToolCallContent",
        "ToolCallContentChunk",
        "ToolCallUpdate",
        "UnknownEvent",
        "UpdateDispatch",
        "UpdateKind",
        "UsageUpdate",
        "UserMessage",
        "UserMessageChunk",
        "decode_event",
        "encode_event",
        "event_from_json",
        "event_json",
        "event_kind",
        "kind_of",
        "v1",
        "v2",
    ],
    "acpstack.local": [
        "MARKER_VARIABLE",
        "TEMP_MARKER",
        "BufferProvider",
        "FileSystem",
        "Location",
        "TerminalExit",
        "TerminalManager",
        "TerminalOutput",
        "Workspace",
        "WriteObserver",
        "become_subreaper",
        "end_orphans",
        "is_subreaper",
    ],
    "acpstack.rpc": [
        "Connection",
        "ConnectionClosed",
        "Dispatcher",
        "HandlerDispatcher",
        "Handlers",
        "ParamsDoNotMatchMethod",
        "RequestTimeout",
        "Writer",
        "disable_tracing",
        "enable_tracing",
        "event_loop_name",
        "run",
        "trace_ids",
    ],
    "acpstack.schema": [
        "EXTENSIONS",
        "METHOD_ALIASES",
        "PROTOCOL_VERSION",
        "PROTOCOL_VERSIONS",
        "STABLE_METHODS",
        "UNSET",
        "UNSTABLE_METHODS",
        "AcpStruct",
        "MethodSpec",
        "UnknownSessionUpdate",
        "UnsetType",
        "convert",
        "lenient_convert",
        "method_table",
        "needs_normalizing",
        "normalize_params",
        "normalize_result",
        "seed_markers",
        "v1",
        "v1_nes",
        "v1_unstable",
        "v2",
        "v2_unstable",
    ],
    "acpstack.server": [
        "AgentServer",
        "ServerLimits",
        "ServerSecurity",
        "bind_socket",
        "is_loopback",
        "serve_remote",
    ],
    "acpstack.testing": [
        "ConnectedPair",
        "connected_pair",
    ],
    "acpstack.traffic": [
        "Difference",
        "HopRecord",
        "LiveServer",
        "Record",
        "RecordingError",
        "RecordingWriter",
        "ReplayReport",
        "TrafficAnalyzer",
        "hop_lines",
        "inspect_agent",
        "read_hops",
        "read_recording",
        "replay_recording",
        "view_recording",
    ],
    "acpstack.transports": [
        "CONNECTION_HEADER",
        "CONNECTION_LOST",
        "LAST_EVENT_HEADER",
        "ONE_STREAM_HEADER",
        "RECEIVED_HEADER",
        "RESUMABLE_HEADER",
        "RETRY_HEADER",
        "SESSION_HEADER",
        "SSE_KEEPALIVE",
        "DataCallback",
        "Envelope",
        "EofCallback",
        "HttpClientTransport",
        "Inbox",
        "MemoryTransport",
        "MissingExtraError",
        "RawFrame",
        "RemoteError",
        "StderrCallback",
        "StdioError",
        "StdioTransport",
        "StreamTransport",
        "SubprocessTransport",
        "Transport",
        "WebSocketClientTransport",
        "WebSocketFrames",
        "memory_pair",
        "open_stdio_transport",
        "peek_envelope",
        "require_extra",
        "single_line",
    ],
    "acpstack.wire": [
        "AUTH_REQUIRED",
        "DEFAULT_MAX_MESSAGE_SIZE",
        "HANDSHAKE_METHODS",
        "INTERNAL_ERROR",
        "INVALID_PARAMS",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "PARSE_ERROR",
        "PERMISSION_DENIED",
        "REQUEST_CANCELLED",
        "RESOURCE_NOT_FOUND",
        "UNSUPPORTED_PROTOCOL_VERSION",
        "CapabilityError",
        "DroppedMessage",
        "Event",
        "FrameDecoder",
        "FramingError",
        "IncomingCancel",
        "IncomingNotification",
        "IncomingRequest",
        "IncomingResponse",
        "InvalidResult",
        "Oversized",
        "PendingCall",
        "ProtocolState",
        "RequestError",
        "RequestId",
        "capability_allows",
        "checked_result",
        "encode_frame",
    ],
}


def sort_key(name: str) -> tuple[int, str]:
    """RUF022's isort-style order: SCREAMING_CASE, then CamelCase, then anything else."""
    if len(name) > 1 and name.isupper() and not name.startswith("_"):
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def public_packages() -> list[str]:
    found = []
    for init in SOURCE.rglob("__init__.py"):
        parts = init.parent.relative_to(SOURCE.parent).parts
        if not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return sorted(found)


def test_every_public_package_is_pinned() -> None:
    assert public_packages() == sorted(PUBLIC_API)


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_all_is_pinned_and_sorted(package: str) -> None:
    exported = importlib.import_module(package).__all__
    assert exported == PUBLIC_API[package]
    assert exported == sorted(exported, key=sort_key)


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
        assert not name.startswith("_") or name == "__version__", name


@pytest.mark.skipif(COMPILED, reason="compiled with mypyc, which drops docstrings")
@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_every_public_name_is_documented(package: str) -> None:
    # Classes and functions by their docstring; an exported module (the generated schema
    # modules) in its package's docstring. Constants and type aliases carry no docstring at
    # run time: the reference page shows them with their comments.
    module = importlib.import_module(package)
    undocumented = []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            if not (value.__doc__ or "").strip():
                undocumented.append(name)
        elif inspect.ismodule(value) and not re.search(rf"\b{name}\b", module.__doc__ or ""):
            undocumented.append(name)
    assert undocumented == []


@pytest.mark.parametrize("package", sorted(set(PUBLIC_API) - {"acpstack", "acpstack.cli"}))
def test_every_library_package_has_its_reference_page(package: str) -> None:
    # (`acpstack` has a page of its own below; `acpstack.cli` is the command, see docs/cli.md)
    page = DOCS / f"{package.removeprefix('acpstack.')}.md"
    assert f"::: {package}\n" in page.read_text(encoding="utf-8")


def test_the_facade_page_says_where_each_of_its_names_is_documented() -> None:
    page = (DOCS / "acpstack.md").read_text(encoding="utf-8")
    assert [name for name in acpstack.__all__ if f"`{name}`" not in page] == []


def test_the_names_design_md_promises() -> None:
    import acpstack

    for attr in (
        "Agent",
        "Client",
        "ClientPeer",
        "AgentPeer",
        "RequestError",
        "ConnectionClosed",
        "spawn_agent",
        "serve_stdio",
    ):
        assert attr in acpstack.__all__, attr
    from acpstack.agent import SessionAgent, SqliteSessionStore, Turn  # noqa: F401
    from acpstack.client import ClientRuntime  # noqa: F401


def test_public_classes_live_in_private_modules_but_are_reexported() -> None:
    import acpstack

    for attr in ("Agent", "Client"):
        cls = getattr(acpstack, attr)
        assert cls.__module__.split(".")[-1].startswith("_")


def test_client_keeps_exporting_the_names_that_moved_to_local() -> None:
    # Workspace, FileSystem and the terminals moved to acpstack.local (shared with agents);
    # code that imports them from acpstack.client gets the very same objects.
    import acpstack.client
    import acpstack.local

    for attr in ("FileSystem", "Workspace", "TerminalManager", "TerminalExit", "TerminalOutput"):
        assert attr in acpstack.client.__all__, attr
        assert getattr(acpstack.client, attr) is getattr(acpstack.local, attr), attr
    from acpstack.client import ClientRuntime

    runtime = ClientRuntime()
    assert isinstance(runtime.fs, acpstack.local.FileSystem)
    assert isinstance(runtime.terminals, acpstack.local.TerminalManager)


@pytest.mark.skipif(COMPILED, reason="compiled with mypyc, which drops docstrings")
def test_the_v2_cancel_api_is_documented() -> None:
    # tool_call/cancel and terminal/cancel: the agent's scope and the client's calls.
    from acpstack.agent import CancelScope, ToolCallHandle
    from acpstack.client import ClientRuntime

    members = (
        CancelScope.cancel,
        ToolCallHandle.cancellable,
        ToolCallHandle.cancelled,
        ClientRuntime.cancel_tool_call,
        ClientRuntime.cancel_terminal,
    )
    assert [m for m in members if not (m.__doc__ or "").strip()] == []


def test_session_setup_takes_a_system_prompt_and_mcp_servers_offered_over_acp() -> None:
    # ClientRuntime's session setup calls: `system_prompt=` (unstable) and `mcp_servers=`
    # typed to take an `McpServerAcp` (what `mcp_host.add` returns), keyword-only.
    from acpstack.agent import McpConnections
    from acpstack.client import ClientRuntime

    for name in ("new_session", "load_session", "resume_session", "fork_session"):
        params = inspect.signature(getattr(ClientRuntime, name)).parameters
        for keyword in ("additional_directories", "mcp_servers", "system_prompt"):
            assert params[keyword].kind is inspect.Parameter.KEYWORD_ONLY, (name, keyword)
        assert params["system_prompt"].default is None, name
        assert "McpServerAcp" in str(params["mcp_servers"].annotation), name
        assert "SystemPrompt" in str(params["system_prompt"].annotation), name
    # A tool call's progress (MCP `notifications/progress`, over ACP too).
    progress = inspect.signature(McpConnections.call_tool).parameters["on_progress"]
    assert progress.kind is inspect.Parameter.KEYWORD_ONLY and progress.default is None
