"""One msgspec pass from a frame to its typed message, for the messages that are most of
the traffic: requests and notifications of the connection's method table, and the answer
to a call.

`decode_envelope` then `decode_typed` read a frame twice (the envelope with raw params,
then the params into their Struct) and take a dozen Python steps in between. Here the
envelope of each method is a Struct tagged by `method`, whose `params` has the method's
type and whose shape is the only valid one (`jsonrpc` "2.0", an `id` for a request and
none for a notification, no `result` or `error`): one decode of their tagged union is
the whole check. The answer to a call is decoded the same way, its `result` typed.

Only what the general path would take unchanged is taken here. Anything that does not
decode, or needs more than a strict decode (seed spellings to normalise, no params, a
handshake: `initialize` or `proxy/initialize`, a `$/cancel_request`, a gate not yet
checked, anything before the handshake completed), returns None and goes the general way,
which reads it again and answers exactly as before.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import msgspec
from msgspec import UNSET, UnsetType

from acpstack.schema import MethodSpec, seed_markers
from acpstack.wire._codec import UNDECODABLE
from acpstack.wire._events import (
    Event,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    PendingCall,
)
from acpstack.wire._negotiation import HANDSHAKE_METHODS, Negotiation
from acpstack.wire._structs import RequestId, TypedResponse

# Where in a frame the top-level "method" key is looked for: encoders write "jsonrpc"
# and "id" (an integer, or a string id of up to ~60 bytes) before it. A frame that has it
# later is still read right, by the general path.
METHOD_WINDOW = 96

# The seed spellings of ACP-INVENTORY §5 belong to v1; v2 types never take them.
_NO_ALIASES = frozenset({"acpstack.schema._generated_v2", "acpstack.schema._generated_v2_unstable"})


class TypedCall:
    """What the general path would otherwise work out for one method: its spec, whether
    it is a request, whether it is gated, and the seed-spelling markers that send a frame
    the general way when they appear in it (None: no such marker)."""

    __slots__ = ("name", "spec", "request", "gated", "markers")

    def __init__(self, spec: MethodSpec, request: bool, markers: tuple[bytes, ...]) -> None:
        self.name = spec.name
        self.spec = spec
        self.request = request
        self.gated = spec.gate is not None
        self.markers = markers or None


def _envelope(spec: MethodSpec, request: bool, markers: tuple[bytes, ...]) -> type:
    """The one valid shape of a message of `spec`, as a Struct tagged by its method."""
    fields: list[tuple[str, Any, Any] | tuple[str, Any]] = [
        ("jsonrpc", Literal["2.0"]),
        ("params", spec.params),
    ]
    if request:
        fields.append(("id", Union[int, str, None]))  # noqa: UP007
    else:
        fields.append(("id", UnsetType, UNSET))
    fields += [("result", UnsetType, UNSET), ("error", UnsetType, UNSET)]
    return msgspec.defstruct(
        "Typed_" + spec.name.replace("/", "_").replace("$", "_"),
        fields,
        tag_field="method",
        tag=spec.name,
        namespace={"call": TypedCall(spec, request, markers)},
        module=__name__,
        gc=False,
    )


def _markers(spec: MethodSpec) -> tuple[bytes, ...] | None:
    """The seed markers to look for before taking `spec`'s strict decode as it is (None:
    never decoded here)."""
    if spec.name in HANDSHAKE_METHODS or spec.name == "$/cancel_request":
        return None  # handled apart (version negotiation, cancellation)
    if getattr(spec.params, "__module__", None) in _NO_ALIASES:
        return ()
    return seed_markers(spec.name)


def call_decoder(requests: dict[str, MethodSpec], notifications: dict[str, MethodSpec]) -> Any:
    """The `decode` of the tagged union of these methods' envelopes."""
    envelopes = []
    both = requests.keys() & notifications.keys()  # a tag names one shape: left out
    for request, table in ((True, requests), (False, notifications)):
        for spec in table.values():
            markers = _markers(spec)
            if markers is not None and spec.name not in both:
                envelopes.append(_envelope(spec, request, markers))
    union = Union[tuple(envelopes)] if envelopes else Literal[None]  # noqa: UP007
    return msgspec.json.Decoder(union).decode


_call_decoders: dict[Any, Any] = {}


_response_decoders: dict[type, Any] = {}


def response_decoder(result_type: type) -> Any:
    """The `decode` of `TypedResponse[result_type]`, made once per type."""
    decode = _response_decoders.get(result_type)
    if decode is None:
        decode = msgspec.json.Decoder(TypedResponse[result_type]).decode  # type: ignore[valid-type]
        _response_decoders[result_type] = decode
    return decode


class OnePass(Negotiation):
    """`ProtocolState`'s fast path: `_one_pass(frame)` returns the event, or None for the
    general path."""

    pending: dict[RequestId, PendingCall]

    def _one_pass(self, frame: bytes) -> Event | None:
        if not self.initialized:
            return None
        if not frame.isascii():
            try:
                frame.decode("utf-8")  # invalid anywhere, even where nothing reads it
            except UnicodeDecodeError:
                return None
        if frame.find(b'"method"', 0, METHOD_WINDOW) < 0:
            return self._typed_response(frame) if len(self.pending) == 1 else None
        try:
            env = (self._calls or self._call_decoder())(frame)
        except UNDECODABLE:
            return None
        call: TypedCall = env.call
        if call.markers is not None:
            for marker in call.markers:
                if frame.find(marker) >= 0:
                    return None  # a seed spelling may be in it: normalised on the general path
        if not call.request:
            return IncomingNotification(call.name, call.spec, env.params)
        if call.gated and call.name not in self._accepted_gated:
            return None  # the general path checks the gate (once)
        return IncomingRequest(env.id, call.name, call.spec, env.params)

    def _call_decoder(self) -> Any:
        overrides = tuple(sorted(self._params_types.items(), key=lambda item: item[0]))
        key = (self.role, self._table_version, self.unstable, self.extensions, overrides)
        decode = _call_decoders.get(key)
        if decode is None:
            decode = call_decoder(self._requests_in, self._notifications_in)
            _call_decoders[key] = decode
        self._calls = decode
        return decode

    def _typed_response(self, frame: bytes) -> Event | None:
        call = next(iter(self.pending.values()))
        if call.result_type is None or call.method in HANDSHAKE_METHODS:
            return None
        try:
            env = response_decoder(call.result_type)(frame)
        except UNDECODABLE:
            return None
        if env.id != call.id:
            return None
        del self.pending[call.id]
        return IncomingResponse(call, result=env.result)
