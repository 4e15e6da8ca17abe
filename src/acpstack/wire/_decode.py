"""Decoding params and results into their typed Structs, and error objects from the peer.

Every failure becomes `RequestError(-32602)` (or a `RequestError` for an error object),
never another exception: values msgspec cannot represent fail like any other bad value.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from msgspec import UNSET

from acpstack.schema import needs_normalizing, normalize_params, normalize_result
from acpstack.wire._codec import UNDECODABLE
from acpstack.wire._errors import INTERNAL_ERROR, RequestError
from acpstack.wire._structs import WireError

log = logging.getLogger("acpstack.wire")
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
_PATH_RE = re.compile(r" - at `\$(.*)`$")


def _decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    return dec


def _error_path(exc: Exception, prefix: str) -> tuple[str, str]:
    text = str(exc)
    match = _PATH_RE.search(text)
    if match is None:
        return prefix, text
    return prefix + match.group(1), text[: match.start()]


def decode_typed(raw: msgspec.Raw | Any, tp: type, method: str, *, result: bool = False) -> Any:
    """Decode params/result into `tp`: strict fast path, then aliases and leniency.

    Raises only RequestError(-32602), with the failing path in `error.data`: values msgspec
    cannot represent (too deep, numbers out of range) fail like any other invalid value.
    """
    where = "$.result" if result else "$.params"
    try:
        if raw is UNSET or raw is None:
            data: Any = None
        elif not result and needs_normalizing(method, raw) and _has_aliases(tp):
            data = msgspec.json.decode(raw)
            data = normalize_params(method, data)
            return _convert(data, tp, where)
        else:
            try:
                return (_decoders.get(tp) or _decoder(tp)).decode(raw)
            except msgspec.ValidationError:
                data = msgspec.json.decode(raw)
        if data is None:
            # Absent params / `null` result: fine when the type has no required field.
            data = {}
        if _has_aliases(tp):
            data = normalize_result(method, data) if result else normalize_params(method, data)
        return _convert(data, tp, where)
    except UNDECODABLE as exc:
        raise RequestError.invalid_params({"path": where, "detail": first_line(exc)}) from None


# The seed spellings of ACP-INVENTORY §5 are v1 spellings (some even clash with v2: v2's
# `capabilities` is a seed name for v1's `clientCapabilities`): v2 types never get them.
_NO_ALIASES = frozenset({"acpstack.schema._generated_v2", "acpstack.schema._generated_v2_unstable"})


def _has_aliases(tp: Any) -> bool:
    return getattr(tp, "__module__", None) not in _NO_ALIASES


def first_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


def _convert(data: Any, tp: type, where: str) -> Any:
    if data is None:
        data = {}
    try:
        return msgspec.convert(data, tp)
    except (msgspec.ValidationError, ValueError, TypeError):
        pass
    from acpstack.schema import lenient_convert  # the slow path loads on first use

    try:
        return lenient_convert(data, tp)
    except (msgspec.ValidationError, ValueError, TypeError, RecursionError) as exc:
        # A type of `take_params_as` may keep what it cannot read (None: it cannot).
        read_leniently = getattr(tp, "read_leniently", None)
        kept = read_leniently(data) if read_leniently is not None else None
        if kept is not None:
            return kept
        path, detail = _error_path(exc, where)
        raise RequestError.invalid_params({"path": path, "detail": detail}) from None


LOGGED_CHARS = 100  # of a value the peer chose (an id, a method): a log line stays short


def clip(value: Any) -> str:
    """`repr(value)` cut to LOGGED_CHARS: a 1 MB id must not make a 1 MB log line (every
    line is redacted on the event loop, and nobody reads that much)."""
    text = repr(value[: LOGGED_CHARS + 1] if isinstance(value, str) else value)
    if len(text) <= LOGGED_CHARS:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:LOGGED_CHARS]}...{size}"


def log_refused(rid: Any, method: str, err: RequestError) -> None:
    """One warning for a request refused for its params: its method and where the params
    failed, never their values (they may hold secrets, and the peer got the details)."""
    path = err.data.get("path") if isinstance(err.data, dict) else None
    log.warning(
        "refused request %s (id %s): invalid params at %s",
        clip(method),
        clip(rid),
        path or "$.params",
    )


def decode_plain(raw: Any) -> Any:
    """Untyped JSON (extension methods, untyped results); RequestError(-32602) if unusable."""
    if raw is UNSET or raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except UNDECODABLE as exc:
        raise RequestError.invalid_params({"detail": first_line(exc)}) from None


def decode_error(raw: Any) -> RequestError:
    try:
        err = msgspec.json.decode(raw, type=WireError)
    except UNDECODABLE as exc:
        return RequestError(
            INTERNAL_ERROR, "Malformed error from peer", {"detail": first_line(exc)}
        )
    return RequestError(err.code, err.message, err.data)
