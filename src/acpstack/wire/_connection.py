"""The sans-IO ACP connection: bytes in, typed events out; typed calls in, bytes out.

No asyncio here. The runtime (`acpstack.rpc`) feeds received bytes to `receive()`,
handles the returned events, and writes whatever `take_outgoing()` returns. Everything a
peer can get wrong is answered here with the right JSON-RPC error, and the connection
stays usable.

The protocol version is negotiated here too (see `_versions.py`): `initialize` picks one
of `versions`, and the method tables (so the typed decoding of everything after it)
switch to that version's. One connection speaks one version.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from acpstack.schema import METHOD_ALIASES, PROTOCOL_VERSIONS, MethodSpec
from acpstack.wire._capability import capability_allows
from acpstack.wire._codec import (
    decode_envelope,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    salvage,
    salvage_session_id,
)
from acpstack.wire._decode import clip, decode_error, decode_plain, decode_typed, log_refused
from acpstack.wire._errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RequestError,
)
from acpstack.wire._events import (
    CapabilityError,
    DroppedMessage,
    Event,
    IncomingCancel,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    PendingCall,
)
from acpstack.wire._framing import (
    DEFAULT_MAX_MESSAGE_SIZE,
    FrameDecoder,
    FramingError,
    Oversized,
    encode_frame,
)
from acpstack.wire._negotiation import HANDSHAKE_METHODS
from acpstack.wire._onepass import OnePass
from acpstack.wire._structs import Invalid, RequestId
from acpstack.wire._versions import advertised

CANCELLED_IDS_KEPT = 1024  # ids of our cancelled calls remembered for their late answers
log = logging.getLogger("acpstack.wire")

Role = Literal["agent", "client"]
DEFERRED_LIMIT = 16 * 1024 * 1024  # bytes held while `initialize` is being answered
CANCEL_REQUEST = "$/cancel_request"


# ---- the state machine ----------------------------------------------------------


class ProtocolState(OnePass):
    """One side of an ACP connection, without I/O.

    framing "auto" reads NDJSON (the official framing), or Content-Length if the peer
    spoke it first; send_framing "auto" answers in the framing the peer uses.
    `versions`: the ACP protocol versions this side speaks (`version` is the one
    `initialize` chose, None before).
    """

    def __init__(
        self,
        role: Role,
        unstable: bool = False,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        framing: str = "auto",
        send_framing: str = "auto",
        extensions: tuple[str, ...] = (),
        versions: tuple[int, ...] = (1,),
    ) -> None:
        unknown = [v for v in versions if v not in PROTOCOL_VERSIONS]
        if unknown or not versions:
            raise ValueError(f"unsupported ACP protocol versions {versions!r}")
        self.role = role
        self.versions: tuple[int, ...] = tuple(sorted(set(versions)))
        self.version: int | None = None
        self.unstable = unstable
        self.max_message_size = max_message_size
        self.framing = framing
        self.send_framing = send_framing
        # Capabilities are negotiated once, at initialize: a method that passed its checks
        # is remembered, and forgotten whenever a capabilities object is set.
        self._local_caps = None
        self._peer_caps = None
        self._accepted_gated = set()
        self._sendable = set()
        self.initialized: bool = False
        # Agent side: messages that arrive while `initialize` is being answered wait for it
        # (a client may pipeline, e.g. a file of requests), up to DEFERRED_LIMIT bytes.
        self.deferring: bool = False
        self._initialize_id: RequestId = None
        self._deferred: list[bytes] = []
        self._deferred_size = 0
        self.pending: dict[RequestId, PendingCall] = {}
        self._cancelled_ids: dict[RequestId, bool] = {}  # their late answers are expected
        self._outgoing: list[bytes] = []
        self.extensions = extensions
        # For the official SDK's API (the compat layer), which has neither: send without
        # the capability gate, and send method names outside the method table.
        self.gated: bool = True
        self.any_method: bool = False
        self._initialize_params: Any = None  # client side: what our `initialize` said
        self._table_version = 0
        self._calls = None
        self._params_types = {}
        self._use_tables(self.versions[0])
        self._decoder = FrameDecoder(max_message_size, framing)
        self._ids = itertools.count(0)
        self._send_mode: str | None = None if send_framing == "auto" else send_framing

    @property
    def send_mode(self) -> str:
        """The framing outgoing messages use now: the configured one, or what the peer spoke."""
        if self._send_mode is not None:
            return self._send_mode
        peer = self._decoder.framing
        if peer == "auto":
            return "ndjson"
        self._send_mode = peer  # the peer's framing is fixed once seen
        return peer

    # -- receiving --------------------------------------------------------------

    def receive(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Feed received bytes (any split); the events they complete. Errors are queued."""
        if self._deferred and not self.deferring:
            return self.take_deferred() + self.receive(data)
        if self._decoder.whole_line(data):
            event = self._one_pass(data)  # the common chunk, decoded with its newline
            if event is not None:
                return [event]
        return self._frames(self._decoder.feed(data))

    def receive_one(self, data: bytes | bytearray | memoryview) -> Event | None:
        """`receive` for the common chunk, faster: when `data` is one whole line holding a
        common message (a request, notification or answer that decodes in one pass), its
        event; otherwise None, having consumed nothing: then call `receive`."""
        if self._deferred or not self._decoder.whole_line(data):
            return None
        return self._one_pass(data)

    def receive_eof(self) -> list[Event]:
        """The peer closed its side: the events of what it left unfinished (a last line)."""
        return self._frames(self._decoder.feed_eof())

    def take_deferred(self) -> list[Event]:
        """Agent side, once `initialize` was answered (or failed): the messages that arrived
        meanwhile, handled now in their order (answers the state gives itself go to
        `take_outgoing`). The next `receive` does it too, before its own data."""
        self.deferring = False
        frames, self._deferred, self._deferred_size = self._deferred, [], 0
        events: list[Event] = []
        for frame in frames:
            event = self._message(frame)
            if event is not None:
                events.append(event)
        return events

    def take_outgoing(self) -> bytes:
        """The bytes queued for the peer (answers the state gave itself); b"" if none."""
        if not self._outgoing:
            return b""
        data = b"".join(self._outgoing)
        self._outgoing.clear()
        return data

    def _frames(self, frames: list[bytes | Oversized | FramingError]) -> list[Event]:
        events: list[Event] = []
        for frame in frames:
            if isinstance(frame, bytes):
                event = self._message(frame)
            elif isinstance(frame, Oversized):
                event = self._oversized(frame)
            else:
                log.warning("framing error: %s", frame.detail)
                self._queue_error(
                    None, RequestError(PARSE_ERROR, "Parse error", {"detail": frame.detail})
                )
                event = DroppedMessage("parse_error", frame.detail)
            if event is not None:
                events.append(event)
        return events

    def _oversized(self, frame: Oversized) -> Event | None:
        found = salvage(frame.prefix)
        text = f"message of at least {frame.size} bytes exceeds the limit of {self.max_message_size} bytes"
        detail = {"detail": text}
        log.warning("dropped a message: %s (method %s)", text, clip(found.method))
        return self._undecodable(
            found,
            frame.prefix,
            frame.size,
            "too_large",
            text,
            RequestError(INVALID_REQUEST, "Invalid request: message too large", detail),
            RequestError(INVALID_REQUEST, "Response too large", detail),
            RequestError(PARSE_ERROR, "Parse error", detail),
        )

    def _undecodable(
        self,
        found: Any,
        prefix: bytes,
        size: int,
        reason: str,
        text: str,
        answer: RequestError,
        failure: RequestError,
        unidentified: RequestError | None = None,
    ) -> Event | None:
        """A message we cannot use. A response to one of our calls fails that call only (with
        `failure`); a request with a readable id gets `answer`; anything else is answered with
        `id: null` (JSON-RPC's rule for what cannot be identified; `unidentified`, default
        `answer`), never with a guessed id, and is reported to the application as dropped
        (unless it was a response: never answer those)."""
        rid = found.id
        if found.method is None and rid is not None and rid in self.pending:
            return IncomingResponse(self.pending.pop(rid), error=failure)
        if found.method is not None and rid is not None:
            self._queue_error(rid, answer)
            return None
        if found.method is None and found.has_result:
            return None  # a stray (or late) response: logged, never answered
        self._queue_error(None, unidentified or answer)
        return DroppedMessage(reason, text, found.method, salvage_session_id(prefix), size)

    def _message(self, frame: bytes) -> Event | None:
        if self.deferring and self._deferred_size + len(frame) <= DEFERRED_LIMIT:
            self._deferred.append(frame)
            self._deferred_size += len(frame)
            return None
        event = self._one_pass(frame)  # the common messages, in one decode
        if event is not None:
            return event
        return self._general(frame)

    def _general(self, frame: bytes) -> Event | None:
        """Any message: its envelope first, then what it is."""
        env = decode_envelope(frame)
        if isinstance(env, Invalid):
            return self._invalid(frame, env)
        try:
            if env.method is UNSET:
                return self._response(env.id, env.result, env.error)
            if env.id is UNSET:
                return self._notification(env.method, env.params)
            return self._request(env.id, env.method, env.params)
        except Exception:  # a bug, or input nobody anticipated: it costs this message only
            log.exception("could not handle a message from the peer")
            if env.method is not UNSET and env.id is not UNSET:
                self._queue_error(env.id, RequestError(INTERNAL_ERROR, "Internal error"))
            return None

    def _invalid(self, frame: bytes, env: Invalid) -> Event | None:
        log.warning("invalid message: %s", env.detail)
        reason = "parse_error" if env.code == PARSE_ERROR else "invalid_message"
        message = "Parse error" if env.code == PARSE_ERROR else "Invalid request"
        error = RequestError(env.code, message, {"detail": env.detail})
        found = salvage(frame)
        if (
            env.id is not None
            and env.code == INVALID_REQUEST
            and not found.has_result
            and env.id not in self.pending
        ):
            # It decoded as an object whose id we read: not a damaged response, so answer it.
            self._queue_error(env.id, error)
            return None
        return self._undecodable(
            found,
            frame,
            len(frame),
            reason,
            env.detail,
            error,
            RequestError(env.code, "Malformed response from peer", {"detail": env.detail}),
        )

    def _request(self, rid: RequestId, method: str, raw_params: Any) -> Event | None:
        spec = self._requests_in.get(method)
        if spec is None and method in METHOD_ALIASES:  # a known unofficial spelling
            spec = self._requests_in.get(METHOD_ALIASES[method])
            method = spec.name if spec is not None else method
        if spec is None:
            if method.startswith("_") and len(method) > 1:
                try:
                    return IncomingRequest(rid, method, None, decode_plain(raw_params))
                except RequestError as err:
                    log_refused(rid, method, err)
                    self._queue_error(rid, err)
                    return None
            self._queue_error(rid, RequestError.method_not_found(method))
            return None
        handshake = method in HANDSHAKE_METHODS
        if self.role == "agent" and not self.initialized and not handshake:
            self._queue_error(
                rid,
                RequestError(
                    INVALID_REQUEST,
                    "Invalid request: `initialize` must be the first request",
                    {"method": method},
                ),
            )
            return None
        if handshake and self.role == "agent":
            return self._initialize_request(rid, raw_params, method)
        if (
            spec.gate is not None
            and self._local_caps is not None
            and method not in self._accepted_gated
        ):
            if not capability_allows(self._local_caps, spec.gate):
                self._queue_error(
                    rid,
                    RequestError(
                        METHOD_NOT_FOUND,
                        "Method not found",
                        {"method": method, "reason": "capability not advertised"},
                    ),
                )
                return None
            self._accepted_gated.add(method)
        try:
            params = decode_typed(raw_params, spec.params, method)
        except RequestError as err:
            log_refused(rid, method, err)
            self._queue_error(rid, err)
            return None
        return IncomingRequest(rid, method, spec, params)

    def _notification(self, method: str, raw_params: Any) -> Event | None:
        spec = self._notifications_in.get(method)
        if spec is None and method in METHOD_ALIASES:
            spec = self._notifications_in.get(METHOD_ALIASES[method])
            method = spec.name if spec is not None else method
        try:
            if spec is None:
                if method.startswith("_") and len(method) > 1:
                    return IncomingNotification(method, None, decode_plain(raw_params))
                log.debug("ignored unknown notification %s", clip(method))
                return None
            params = decode_typed(raw_params, spec.params, method)
        except RequestError as err:
            log.warning(
                "dropped notification %s with invalid params: %s", clip(method), clip(err.data)
            )
            raw = raw_params if isinstance(raw_params, msgspec.Raw) else b""
            detail = (
                str(err.data.get("detail", err.message))
                if isinstance(err.data, dict)
                else err.message
            )
            return DroppedMessage(
                "invalid_params", detail, method, salvage_session_id(bytes(raw)), len(raw)
            )
        if method == CANCEL_REQUEST:
            return IncomingCancel(params.request_id)
        return IncomingNotification(method, spec, params)

    def _response(self, rid: Any, raw_result: Any, raw_error: Any) -> Event | None:
        call = self.pending.pop(rid, None) if rid is not None else None
        if call is None:
            if self._cancelled_ids.pop(rid, False):
                log.debug("ignored the late answer to request %s, which we cancelled", clip(rid))
            else:
                log.warning("ignored a response with unknown id %s", clip(rid))
            return None
        if raw_error is not UNSET:
            return IncomingResponse(call, error=decode_error(raw_error))
        if call.method in HANDSHAKE_METHODS and self.role == "client":
            return self._initialize_response(call, raw_result)
        try:
            if call.result_type is None:
                return IncomingResponse(call, result=decode_plain(raw_result))
            result = decode_typed(raw_result, call.result_type, call.method, result=True)
        except RequestError as err:
            return IncomingResponse(
                call, error=RequestError(err.code, "Invalid result from peer", err.data)
            )
        return IncomingResponse(call, result=result)

    def _queue_error(self, rid: RequestId, err: RequestError) -> None:
        self._outgoing.append(self._frame(encode_error(rid, err.to_dict())))

    # -- sending ------------------------------------------------------------------

    def _frame(self, body: bytes) -> bytes:
        # (find, not `in`: `bytes in bytes` first tries the needle as an int and fails.)
        if self._send_mode == "ndjson" and body.find(b"\n") < 0:
            return body + b"\n"  # the common case, without encode_frame's dispatch
        return encode_frame(body, self.send_mode)

    def start_request(
        self, method: str, params: Any, *, check_gate: bool = True
    ) -> tuple[RequestId, bytes, PendingCall]:
        """A new call: its id, the frame to write and its PendingCall (CapabilityError)."""
        spec = self._requests_out.get(method)
        if spec is None and not method.startswith("_") and not self.any_method:
            raise CapabilityError(f"{method} is not a request the {self.role} can send")
        if spec is not None and check_gate and self.gated and method not in self._sendable:
            self._check_gate(spec)
        rid = next(self._ids)
        session_id = getattr(params, "session_id", None)
        call = PendingCall(
            rid,
            method,
            spec.result if spec else None,
            session_id if isinstance(session_id, str) else None,
        )
        self.pending[rid] = call
        if method in HANDSHAKE_METHODS and self.role == "client":
            self._initialize_params = params
            asked = getattr(params, "protocol_version", 1)
            shape = 2 if isinstance(asked, int) and asked >= 2 else 1
            self.local_capabilities = advertised(params, shape, "client")
        return rid, self._frame(encode_request(rid, method, params)), call

    def notification(self, method: str, params: Any) -> bytes:
        """The frame of a notification (CapabilityError when it may not be sent now)."""
        self._check_notification(method)
        return self._frame(encode_notification(method, params))

    def notification_head(self, method: str) -> bytes | None:
        """The bytes that open every newline-delimited frame of a notification of
        `method`, up to its params' JSON: a sender of many (each `session/update` of a
        session) then makes a frame as head + params + `}` and a newline, without
        encoding the envelope again. None when frames are not newline-delimited now.
        CapabilityError when the notification may not be sent now."""
        self._check_notification(method)
        if self.send_mode != "ndjson":
            return None
        return encode_notification(method, None)[: -len(b"null}")]

    def _check_notification(self, method: str) -> None:
        spec = self._notifications_out.get(method)
        if spec is None and not method.startswith("_") and not self.any_method:
            raise CapabilityError(f"{method} is not a notification the {self.role} can send")
        if spec is not None and self.gated and method not in self._sendable:
            self._check_gate(spec)

    def result(self, rid: RequestId, method: str, result: Any) -> bytes:
        """The frame answering request `rid` of `method` with `result`."""
        if method in HANDSHAKE_METHODS and self.role == "agent":
            version = self.version if self.version is not None else self._table_version
            if getattr(result, "protocol_version", version) != version:
                # The version was negotiated here; the handler's answer only describes
                # the agent. (Set on the answer, which is the handler's own object.)
                result.protocol_version = version
            self.local_capabilities = advertised(result, version, "agent")
            self.initialized = True
            self.deferring = False
        return self._frame(encode_result(rid, result))

    def error(self, rid: RequestId, err: RequestError) -> bytes:
        """The frame answering request `rid` with the error `err`."""
        if self.deferring and rid == self._initialize_id:
            self.deferring = False  # initialize failed: what waited is refused in turn
        return self._frame(encode_error(rid, err.to_dict()))

    def cancel_outbound(self, rid: RequestId) -> bytes | None:
        """Forget a pending call and return the `$/cancel_request` frame for it."""
        if self.pending.pop(rid, None) is None:
            return None
        self._cancelled_ids[rid] = True
        if len(self._cancelled_ids) > CANCELLED_IDS_KEPT:  # a peer that never answers them
            del self._cancelled_ids[next(iter(self._cancelled_ids))]
        return self._frame(encode_notification(CANCEL_REQUEST, {"requestId": rid}))

    def fail_all_pending(self) -> list[PendingCall]:
        """Forget every call still waiting for an answer; the calls (to fail them)."""
        calls = list(self.pending.values())
        self.pending.clear()
        return calls

    def _check_gate(self, spec: MethodSpec) -> None:
        """Raise CapabilityError unless `spec` may be sent now; remember a method that may
        (the answer only changes when the peer's capabilities are set again)."""
        if spec.name in HANDSHAKE_METHODS or spec.name == CANCEL_REQUEST:
            return
        if self.role == "client" and not self.initialized:
            raise CapabilityError(f"cannot send {spec.name} before `initialize` has completed")
        if spec.gate is not None and not capability_allows(self._peer_caps, spec.gate):
            path = ".".join(spec.gate)
            raise CapabilityError(
                f"the peer did not advertise `{path}`, so {spec.name} may not be sent"
            )
        self._sendable.add(spec.name)
