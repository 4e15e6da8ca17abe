"""Validate ACP messages against the vendored official JSON Schema, per method and direction.

The schema's `$defs` carry `x-method` and `x-side` marks: `FooRequest` / `FooNotification`
with `x-side: client` are what an agent sends, `FooResponse` with `x-side: agent` is what an
agent answers (and the other way round for a client). Each payload is checked against its
own definition, so a violation names the method and the JSON path of the bad value.

`jsonschema` is the `check` extra; it is imported on first use.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Sender = Literal["agent", "client"]

INSTALL_HINT = (
    'in the acpstack checkout, pip install ".[check]" (or pip install "jsonschema>=4.20")'
)
# Inside an installed wheel the schema sits next to this module (see pyproject's
# force-include); in a source checkout it is the repository's vendor folder.
_PACKAGED = Path(__file__).resolve().parent / "_acp_schema"
_CHECKOUT = Path(__file__).resolve().parents[3] / "vendor" / "acp-schema"
_MAX_ERRORS = 20


class SchemaUnavailable(RuntimeError):
    """The vendored schema or the `jsonschema` package cannot be found."""


@dataclass(frozen=True)
class Violation:
    """One place where a message does not match the schema."""

    method: str
    path: str  # JSON path into the whole message, e.g. $.params.update.content
    message: str
    definition: str = ""  # the `$defs` name checked against ("" for envelope rules)

    def __str__(self) -> str:
        where = f" ({self.definition})" if self.definition else ""
        return f"{self.method}{where} at {self.path}: {self.message}"


def schema_dir() -> Path:
    for candidate in (_PACKAGED, _CHECKOUT):
        if (candidate / "v1" / "schema.json").is_file():
            return candidate
    raise SchemaUnavailable(f"the ACP schema files are missing (looked in {_PACKAGED})")


@functools.cache
def load_schema(unstable: bool = False, version: int = 1) -> dict[str, Any]:
    """The official schema of protocol `version` (1, or 2: the v2 draft)."""
    if version not in (1, 2):
        raise ValueError(f"no schema for ACP protocol version {version!r}")
    name = "schema.unstable.json" if unstable else "schema.json"
    data: dict[str, Any] = json.loads((schema_dir() / f"v{version}" / name).read_text("utf-8"))
    return data


def _jsonschema() -> Any:
    try:
        return importlib.import_module("jsonschema")
    except ImportError as exc:
        raise SchemaUnavailable(
            f"schema validation needs the optional package `jsonschema`: {INSTALL_HINT}"
        ) from exc


class MessageValidator:
    """Checks whole JSON-RPC messages: the envelope by hand, each payload by its `$defs`.

    `unstable` selects the schema with ACP's unstable methods too, `version` the protocol
    version's schema (1, or 2: the v2 draft). The compiled validator of each definition is
    cached, so one instance should serve a whole run.

    Raises:
        SchemaUnavailable: The schema files or the `jsonschema` package are missing.
    """

    def __init__(self, *, unstable: bool = False, version: int = 1) -> None:
        self._jsonschema = _jsonschema()
        self.version = version
        """The protocol version whose schema this validator checks against."""
        self.schema: dict[str, Any] = load_schema(unstable, version)
        """The whole official JSON Schema (do not change it)."""
        self.defs: dict[str, Any] = self.schema["$defs"]
        """Its `$defs`, by name."""
        self._names: dict[tuple[str, str, str], str] = {}
        for name, definition in self.defs.items():
            method = definition.get("x-method")
            if not method:
                continue
            for suffix, kind in (
                ("Request", "request"),
                ("Notification", "notification"),
                ("Response", "result"),
            ):
                if name.endswith(suffix):
                    self._names[(method, definition.get("x-side", ""), kind)] = name
        self._validators: dict[str, Any] = {}

    def known_method(self, method: str, sender: Sender | None = None) -> bool:
        """Whether the schema defines `method`: as a request or notification `sender`
        sends (to the other side, or to either), or in either direction when `sender` is
        None."""
        if sender is None:
            return any(key[0] == method for key in self._names)
        return bool(self._handlers(method) & {_other(sender), "protocol", "both"})

    def _handlers(self, method: str) -> set[str]:
        """The sides the schema says receive `method` (the `x-side` of its requests and
        notifications)."""
        return {side for name, side, kind in self._names if name == method and kind != "result"}

    def _misdirected(self, method: str, kind: str, sender: Sender) -> str:
        """Why `sender` may not send `method` as a `kind` ("" when the schema does not
        say: an extension method, or one it defines only for other parties)."""
        receiver = _other(sender)
        handlers = self._handlers(method)
        if handlers & {receiver, "protocol", "both"}:
            other = "notification" if kind == "request" else "request"
            if self.definition_for(method, other, receiver) is None:
                return ""
            if other == "notification":
                return f"`{method}` is a notification: it carries no id (and gets no answer)"
            return f"`{method}` is a request: it needs an id (the {receiver} answers it)"
        if sender in handlers:
            article = "an" if sender == "agent" else "a"
            return (
                f"`{method}` is sent by the {receiver} to the {sender}, never the other way "
                f"round: {article} {sender} must not send it"
            )
        return ""

    def definition_for(self, method: str, kind: str, handled_by: str) -> str | None:
        """The `$defs` name of `method`'s payload of `kind` (request, notification, result)
        where `handled_by` is the side that receives the request or notification."""
        for side in (handled_by, "protocol", "both"):
            name = self._names.get((method, side, kind))
            if name is not None:
                return name
        return None

    def validate_payload(
        self, definition: str, payload: Any, *, prefix: str = "$"
    ) -> list[tuple[str, str]]:
        """Problems of `payload` against `$defs/definition`, as (JSON path, message) pairs."""
        validator = self._validators.get(definition)
        if validator is None:
            schema = {
                "$schema": self.schema.get("$schema"),
                "$defs": self.defs,
                "$ref": f"#/$defs/{definition}",
            }
            validator = self._jsonschema.Draft202012Validator(schema)
            self._validators[definition] = validator
        found: list[tuple[str, str]] = []
        errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
        for error in errors:
            for path, text in _explain(self._jsonschema, error):
                found.append((_path(prefix, path), _shorten(text)))
        return found[:_MAX_ERRORS]

    def validate(
        self, message: Any, *, sender: Sender, answered_method: str | None = None
    ) -> list[Violation]:
        """Everything wrong with one message `sender` wrote. `answered_method` is the method
        of the request a response answers (None when unknown: only the envelope is checked)."""
        receiver = _other(sender)
        envelope = _envelope_problems(message)
        if envelope:
            label = message.get("method", "") if isinstance(message, dict) else ""
            return [Violation(str(label or "?"), path, text) for path, text in envelope]
        assert isinstance(message, dict)
        method = message.get("method")
        if isinstance(method, str):
            kind = "request" if "id" in message else "notification"
            definition = self.definition_for(method, kind, receiver)
            if definition is None and (wrong := self._misdirected(method, kind, sender)):
                return [Violation(method, "$.method", wrong)]
            payload, prefix = message.get("params"), "$.params"
        elif "error" in message:
            method = answered_method or "?"
            definition, payload, prefix = "Error", message["error"], "$.error"
        else:
            method = answered_method or "?"
            definition = None
            if answered_method is not None:
                definition = self.definition_for(answered_method, "result", sender)
            payload, prefix = message.get("result"), "$.result"
        if definition is None:
            return []  # an extension method, or a response we cannot attribute
        return [
            Violation(method, path, text, definition)
            for path, text in self.validate_payload(definition, payload, prefix=prefix)
        ]


def _other(side: Sender) -> Sender:
    return "client" if side == "agent" else "agent"


def _envelope_problems(message: Any) -> list[tuple[str, str]]:
    """JSON-RPC 2.0 envelope rules, as (path, problem) pairs."""
    if not isinstance(message, dict):
        kind = type(message).__name__
        return [("$", f"a JSON-RPC message is a JSON object, got {kind}")]
    problems = []
    if message.get("jsonrpc") != "2.0":
        problems.append(
            ("$.jsonrpc", f'must be "2.0", got {_shorten(repr(message.get("jsonrpc")))}')
        )
    if "id" in message and not _is_request_id(message["id"]):
        problems.append(("$.id", f"must be a string, an integer or null, got {message['id']!r}"))
    if "method" in message:
        if not isinstance(message["method"], str):
            problems.append(("$.method", "must be a string"))
        if "params" in message and not isinstance(message["params"], dict | list):
            problems.append(("$.params", "must be an object"))
        return problems
    if "id" not in message:
        problems.append(("$", "neither a request (method) nor a response (id)"))
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        problems.append(("$", "a response carries exactly one of `result` and `error`"))
    if has_error:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            problems.append(("$.error", "must be an object with an integer `code`"))
        elif not isinstance(error.get("message"), str):
            problems.append(("$.error.message", "must be a string"))
    return problems


def _is_request_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or type(value) is int


def _explain(jsonschema: Any, error: Any) -> list[tuple[Any, str]]:
    """(path, message) pairs that say why `error` happened. A failed union of tagged
    variants (a `sessionUpdate`, a content block `type`...) is explained by the variant
    the tag selects, not by whichever variant jsonschema finds most relevant."""
    if not error.context:
        return [(error.absolute_path, error.message)]
    arms = error.validator_value if isinstance(error.validator_value, list) else []
    tags = [_tags(arm) for arm in arms]
    instance = error.instance
    # v2's unions end with an open arm (no tag: "custom or future" values), v1's do not
    if isinstance(instance, dict) and any(tags):
        chosen = [
            i
            for i, tag in enumerate(tags)
            if tag and all(instance.get(k) == v for k, v in tag.items())
        ]
        if len(chosen) == 1:
            inner = [e for e in error.context if e.relative_schema_path[0] == chosen[0]]
            return [found for e in inner for found in _explain(jsonschema, e)]
        key = next(iter(next(t for t in tags if t)))
        # without the tag, only an open arm that requires the tag too cannot match either
        # (an untagged variant, like v1's stdio McpServer, may lack it)
        tagless = [arm for arm, tag in zip(arms, tags, strict=True) if not tag]
        missing = key not in instance and all(key in arm.get("required", ()) for arm in tagless)
        if not chosen and (all(tags) or missing):
            known = ", ".join(str(t.get(key)) for t in tags if t)
            got = repr(instance[key]) if key in instance else "missing"
            return [(error.absolute_path, f"`{key}` is {got}; expected one of: {known}")]
    best = jsonschema.exceptions.best_match(error.context)
    if best is not None and len(best.absolute_path) >= len(error.absolute_path):
        return _explain(jsonschema, best)
    return [(error.absolute_path, error.message)]


def _tags(arm: Any) -> dict[str, Any]:
    """The constant properties that select a variant of a tagged union (its tag)."""
    properties = arm.get("properties") if isinstance(arm, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {k: v["const"] for k, v in properties.items() if isinstance(v, dict) and "const" in v}


def _path(prefix: str, parts: Iterable[Any]) -> str:
    out = prefix
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
