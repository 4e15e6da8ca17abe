"""Who may talk to the server: the Host and Origin allowlists (DNS rebinding, cross-site
WebSocket hijacking) and the token.

- Host: by default only loopback names (any port); the bound address is added by
  `acpstack serve`. "*" allows any Host (only sensible with a token).
- Origin: a request without one (not a browser) passes; a browser's must be a loopback
  origin or be listed. "*" allows any origin.
- Token: `Authorization: Bearer T`, `X-Secret-Key: T` (Goose) or `?token=T`, compared in
  constant time. Preflight requests (OPTIONS) carry no token and are answered without one.
  Several tokens (`tokens`: token -> principal name) let several people share a server:
  each connection belongs to the principal whose token opened it, and so do the sessions
  it creates. `token` alone is the principal "default".
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

DEFAULT_PRINCIPAL = "default"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
EXPOSED_HEADERS = "Acp-Connection-Id, Acp-Session-Id, Acp-Resumable, Acp-One-Stream"
ALLOWED_HEADERS = (
    "Content-Type, Authorization, X-Secret-Key, Acp-Connection-Id, Acp-Session-Id, "
    "Acp-Protocol-Version, Last-Event-ID, Acp-Retry, Acp-One-Stream"
)


@functools.lru_cache(maxsize=1024)  # every request's Host: a few names, parsed once each
def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Rejection:
    """Why a request was refused: the HTTP status, a message that names no secret, and
    headers to send with it."""

    status: int
    message: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ServerSecurity:
    """The server's checks of each request (see the module's doc): `token` (None: none
    asked), and the hosts and origins allowed besides the loopback ones ("*": any)."""

    token: str | None = None
    allowed_hosts: Sequence[str] = ()  # besides loopback names; "*" = any
    allowed_origins: Sequence[str] = ()  # besides loopback origins; "*" = any
    tokens: Mapping[str, str] = field(default_factory=dict)  # token -> principal name

    def __repr__(self) -> str:  # never show a token
        return f"ServerSecurity(token={'set' if self.token else None}, tokens={len(self.tokens)}, allowed_hosts={list(self.allowed_hosts)!r}, allowed_origins={list(self.allowed_origins)!r})"

    @property
    def required(self) -> bool:
        """Whether requests must carry a token."""
        return self.token is not None or bool(self.tokens)

    def principal(self, headers: dict[str, str], query_string: bytes) -> str | None:
        """The name of the principal whose token the request carries (None: no token
        matches, or none is required). Every known token is compared, in constant time."""
        known = [(self.token, DEFAULT_PRINCIPAL)] if self.token is not None else []
        known += list(self.tokens.items())
        found = None
        for offered in _offered_tokens(headers, query_string):
            for token, name in known:
                if hmac.compare_digest(offered.encode(), token.encode()) and found is None:
                    found = name
        return found

    def check_host(self, host: str | None) -> Rejection | None:
        """None when the Host header names this machine or an allowed host; else 421."""
        if "*" in self.allowed_hosts:
            return None
        if host is None or "," in host:
            return Rejection(421, "missing or repeated Host header")
        name = _host_name(host)
        if is_loopback(name) or name in {_host_name(h) for h in self.allowed_hosts}:
            return None
        return Rejection(421, "Host not allowed")

    def origin_allowed(self, origin: str) -> bool:
        """Whether a browser origin may talk to the server: a loopback http(s) origin, or
        one listed."""
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return (
            parts.scheme in ("http", "https")
            and parts.hostname is not None
            and is_loopback(parts.hostname)
        )

    def check_origin(self, origin: str | None) -> Rejection | None:
        """None for a request without Origin (not a browser) or an allowed one; else 403."""
        if origin is None or self.origin_allowed(origin):
            return None
        return Rejection(403, "Origin not allowed")

    def check_token(self, headers: dict[str, str], query_string: bytes) -> Rejection | None:
        """None when no token is asked for or one offered matches (compared in constant
        time); else 401 with `WWW-Authenticate`."""
        if not self.required or self.principal(headers, query_string) is not None:
            return None
        return Rejection(
            401, "missing or wrong token", (("WWW-Authenticate", 'Bearer realm="acp"'),)
        )


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _offered_tokens(headers: dict[str, str], query_string: bytes) -> list[str]:
    offered = []
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        offered.append(auth[7:].strip())
    if "x-secret-key" in headers:
        offered.append(headers["x-secret-key"].strip())
    if query_string:
        offered += [v for k, v in parse_qsl(query_string.decode("latin-1")) if k == "token"]
    return offered
