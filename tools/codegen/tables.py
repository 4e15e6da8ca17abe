"""The generator's hand-kept tables: what the schema does not say itself.

Envelope and free-form `$defs`, the unions receivers keep open, the capability gate of each
method (from ACP-INVENTORY), the sides of the proxy methods, and the integer formats.
A method new to the schema needs its entry in `GATES` (the generator fails without one).
"""

from __future__ import annotations

# JSON-RPC envelope unions: the wire layer handles envelopes itself.
ENVELOPE_DEFS = {
    "AgentRequest",
    "AgentResponse",
    "AgentNotification",
    "ClientRequest",
    "ClientResponse",
    "ClientNotification",
    "ProtocolLevelNotification",
    "ProxyRequest",
    "ProxyResponse",
    "ProxyNotification",
}
# Extension payloads are arbitrary JSON.
ANY_DEFS = {"ExtRequest", "ExtResponse", "ExtNotification"}
# Unions whose receivers must keep unknown variants instead of rejecting the message
# (ACP-INVENTORY §6.3.36/§2.1: clients tolerate and preserve unknown session updates).
OPEN_ON_RECEIVE = {"SessionUpdate": "UnknownSessionUpdate"}

# Capability gates, from ACP-INVENTORY §1.1/§1.2. A path of attribute names on the
# receiver's advertised capabilities; None = no capability gate (baseline, or a gate that
# depends on session state such as modes/config options in the session response).
GATES: dict[str, tuple[str, ...] | None] = {
    "initialize": None,
    "authenticate": None,
    "logout": ("auth", "logout"),
    "session/new": None,
    "session/load": ("load_session",),
    "session/list": ("session_capabilities", "list"),
    "session/delete": ("session_capabilities", "delete"),
    "session/resume": ("session_capabilities", "resume"),
    "session/close": ("session_capabilities", "close"),
    "session/fork": ("session_capabilities", "fork"),
    "session/archive": ("session_capabilities", "archive"),
    "session/unarchive": ("session_capabilities", "archive"),
    "session/status": ("session_capabilities", "status"),
    "session/set_title": ("session_capabilities", "title"),
    "auth/status": ("auth", "status"),
    "auth/status_update": None,  # sent by agents that advertise auth.status; clients need nothing
    "proxy/initialize": None,
    "proxy/successor": None,
    "session/set_mode": None,
    "session/set_config_option": None,
    "session/prompt": None,
    "session/cancel": None,
    "session/request_permission": None,
    "session/update": None,
    "fs/read_text_file": ("fs", "read_text_file"),
    "fs/write_text_file": ("fs", "write_text_file"),
    "terminal/create": ("terminal",),
    "terminal/output": ("terminal",),
    "terminal/wait_for_exit": ("terminal",),
    "terminal/kill": ("terminal",),
    "terminal/release": ("terminal",),
    "elicitation/create": ("elicitation",),
    "elicitation/complete": ("elicitation",),
    "$/cancel_request": None,
    "providers/list": ("providers",),
    "providers/set": ("providers",),
    "providers/disable": ("providers",),
    "nes/start": ("nes",),
    "nes/suggest": ("nes",),
    "nes/close": ("nes",),
    "nes/accept": ("nes",),
    "nes/reject": ("nes",),
    "document/didOpen": ("nes", "events", "document", "did_open"),
    "document/didChange": ("nes", "events", "document", "did_change"),
    "document/didClose": ("nes", "events", "document", "did_close"),
    "document/didSave": ("nes", "events", "document", "did_save"),
    "document/didFocus": ("nes", "events", "document", "did_focus"),
    "mcp/connect": None,
    "mcp/message": None,  # whoever declared an `acp` MCP server answers for it
    "mcp/disconnect": None,
}

# Proxy-chain methods (the `proxyMethods` group) between a conductor and a proxy. On the
# proxy's upstream connection the conductor is the client side and the proxy the agent
# side: the conductor sends `proxy/initialize`; `proxy/successor` goes both ways.
PROXY_SIDES: dict[str, str] = {"proxy/initialize": "agent", "proxy/successor": "both"}

INT_FORMATS = {
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, None),  # msgspec bounds must fit int64; it still rejects integers >= 2**64
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint": (0, None),
    "int": (None, None),
    "double": None,
    "float": None,
}
