"""Keep credentials out of everything the reference agent prints, logs, sends or stores.

Three tools, used wherever text could carry a secret:

- `redact_url(url)`: user info (`user:KEY@`) and the values of query parameters whose
  names look secret (`api_key`, `token`, `sig`, ...) become `***`.
- `redact_headers(headers)`: values of headers whose names look secret (`Authorization`,
  `x-api-key`, cookies, anything with key/token/secret/password in its name).
- `Redactor(secrets).text(s)`: removes the known secret values (in any of their usual
  encodings), then every URL, `Bearer`/`Basic` credential and `name=value` pair with a
  secret-looking name that occurs in free text (error bodies, exception messages, logs).
  `Redactor(secrets).values(s)` removes only the known values (for command output).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"

# Parts of parameter or header names that mark their values as credentials.
_SECRET_PARTS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "credential",
    "auth",
    "cookie",
)
_SECRET_NAMES = frozenset({"sig", "signature", "jwt", "bearer"})

# Linear time on any text (it runs on the event loop, over text a peer chose): each run of
# name characters is entered only at its first character (the lookbehinds) and taken whole
# (possessive `++`/`*+`), so a long run is scanned once instead of once per position.
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://[^\s'\"<>`]++")
_SCHEME_CREDENTIAL = re.compile(
    r"(?i)\b(bearer|basic)(\s++)[A-Za-z0-9._~+/=:-]{8,}"
)  # real credentials are long
_NAME_VALUE = re.compile(
    r"""(?i)(["']?)(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]++)\1(\s*+[=:]\s*+)(["']?)([^\s"'&,;}\]]++)"""
)
_SHORTEST_SECRET = 4  # shorter values are not worth scanning for (and would mask words)


def is_secret_name(name: str) -> bool:
    """True for parameter/header names whose values are credentials (api_key, X-Api-Key, ...)."""
    lowered = name.strip().lower().replace("-", "_")
    if lowered in _SECRET_NAMES:
        return True
    return any(part in lowered for part in _SECRET_PARTS)


def redact_url(url: str) -> str:
    """The URL with its user info and secret-looking query values masked."""
    try:
        parts = urlsplit(url)
        hostinfo = parts.netloc.rpartition("@")[2]
    except ValueError:
        return MASK
    netloc = f"{MASK}@{hostinfo}" if "@" in parts.netloc else parts.netloc
    query = _redact_query(parts.query)
    fragment = _redact_query(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_query(query: str) -> str:
    if not query:
        return query
    pieces = []
    for piece in query.split("&"):
        name, sep, _value = piece.partition("=")
        pieces.append(f"{name}={MASK}" if sep and is_secret_name(unquote_plus(name)) else piece)
    return "&".join(pieces)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: MASK if is_secret_name(name) else value for name, value in headers.items()}


def url_secrets(url: str) -> list[str]:
    """The credential values a URL carries (user info parts, secret query values)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [value for value in (parts.username, parts.password) if value]
    found += [
        value
        for name, value in parse_qsl(parts.query, keep_blank_values=False)
        if is_secret_name(name)
    ]
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        found.append(userinfo)
    return found


def _variants(secret: str) -> set[str]:
    """The forms a secret shows up in: as given, %-encoded or decoded, and in Basic auth."""
    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        unquote(secret),
        unquote_plus(secret),
    }
    if ":" in secret:
        forms.add(base64.b64encode(unquote(secret).encode()).decode())
    return {f for f in forms if len(f) >= _SHORTEST_SECRET}


class Redactor:
    """Masks the given secret values and anything that looks like a credential in text."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: list[str] = []
        self.add(*secrets)

    def add(self, *secrets: str | None) -> None:
        """Mask these values too (secrets that arrive later, e.g. with `providers/set`)."""
        forms = set(self._secrets)
        for secret in secrets:
            if secret:
                forms |= _variants(secret)
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(forms, key=len, reverse=True)

    @classmethod
    def for_endpoint(cls, base_url: str | None, api_key: str | None) -> Redactor:
        return cls([api_key, *url_secrets(base_url or "")])

    def values(self, text: str) -> str:
        """Mask only the known secret values: for text such as a command's output, where
        credential-looking patterns (`api_key = ...`) are mostly code, kept as it is."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def text(self, text: str) -> str:
        text = self.values(text)
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
        text = _SCHEME_CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
        return _NAME_VALUE.sub(_mask_pair, text)


def _mask_pair(match: re.Match[str]) -> str:
    quote_char, name, sep, value_quote, value = match.groups()
    if value == MASK or not is_secret_name(name):
        return match.group(0)
    return f"{quote_char}{name}{quote_char}{sep}{value_quote}{MASK}"


class RedactingFormatter(logging.Formatter):
    """A log formatter whose whole output (message, arguments, traceback) goes through a Redactor."""

    def __init__(self, redactor: Redactor, fmt: str | None = None) -> None:
        super().__init__(fmt)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.text(super().format(record))


def install_log_redaction(redactor: Redactor, level: int = logging.WARNING) -> logging.Handler:
    """Send log records (and warnings) to stderr through the redactor (replaces the root
    logger's handlers)."""
    handler = logging.StreamHandler()
    handler.setFormatter(
        RedactingFormatter(redactor, "acpstack agent: %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # library warnings go through the same redaction
    return handler
