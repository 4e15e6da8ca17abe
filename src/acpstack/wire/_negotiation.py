"""The part of `ProtocolState` that negotiates the protocol version (a mixin; the rules
are in `_versions.py`): the agent side chooses at `initialize` and decodes it in the
chosen version's shape, the client side reads the version of the answer; both switch to
that version's method tables, so everything after `initialize` decodes in its types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from acpstack.schema import MethodSpec, method_table
from acpstack.wire._decode import decode_typed, log_refused
from acpstack.wire._errors import INVALID_REQUEST, RequestError
from acpstack.wire._events import Event, IncomingRequest, IncomingResponse, PendingCall
from acpstack.wire._structs import RequestId
from acpstack.wire._versions import (
    advertised,
    downgrade_initialize,
    negotiate,
    requested_version,
    unsupported_version,
)

#: The requests that open a connection: `initialize`, and a conductor's `proxy/initialize`.
HANDSHAKE_METHODS = frozenset({"initialize", "proxy/initialize"})


class Negotiation:
    """Version negotiation over the attributes `ProtocolState` keeps."""

    role: str
    unstable: bool
    extensions: tuple[str, ...]
    versions: tuple[int, ...]
    version: int | None
    initialized: bool
    deferring: bool
    _initialize_id: RequestId
    _initialize_params: Any
    _table_version: int
    _requests_in: dict[str, MethodSpec]
    _notifications_in: dict[str, MethodSpec]
    _calls: Any
    _params_types: dict[str, type]
    _requests_out: dict[str, MethodSpec]
    _notifications_out: dict[str, MethodSpec]
    _local_caps: Any
    _peer_caps: Any
    _accepted_gated: set[str]  # gated methods we advertised, checked
    _sendable: set[str]  # methods checked sendable

    @property
    def local_capabilities(self) -> Any:
        """What this side advertised in initialize (None before)."""
        return self._local_caps

    @local_capabilities.setter
    def local_capabilities(self, caps: Any) -> None:
        self._local_caps = caps
        self._accepted_gated.clear()

    @property
    def peer_capabilities(self) -> Any:
        """What the peer advertised in initialize (None before)."""
        return self._peer_caps

    @peer_capabilities.setter
    def peer_capabilities(self, caps: Any) -> None:
        self._peer_caps = caps
        self._sendable.clear()

    def _queue_error(self, rid: RequestId, err: RequestError) -> None:
        raise NotImplementedError

    def take_params_as(self, params_types: Mapping[str, type]) -> None:
        """Decode the params of these incoming methods into the given types instead of
        the method table's (in every version; e.g. a client that keeps `session/update`s
        as version-neutral events). The type must read that method's params JSON."""
        self._params_types = dict(params_types)
        version, self._table_version = self._table_version, 0
        self._use_tables(version)

    def _use_tables(self, version: int) -> None:
        """Speak `version`'s methods (v2's tables load only when a connection needs them)."""
        if version == self._table_version:
            return
        self._table_version = version
        self._calls = None  # the one-pass decoder of the old tables
        table = method_table(self.unstable, self.extensions if version == 1 else (), version)
        mine = {self.role, "both", "protocol"}
        peer = {"client" if self.role == "agent" else "agent", "both", "protocol"}
        # Method name -> spec, one table per direction and kind.
        self._requests_in = {
            s.name: s for s in table if s.handled_by in mine and s.kind == "request"
        }
        self._notifications_in = {
            s.name: s for s in table if s.handled_by in mine and s.kind == "notification"
        }
        for name, params in self._params_types.items():
            for specs in (self._requests_in, self._notifications_in):
                if name in specs:
                    specs[name] = msgspec.structs.replace(specs[name], params=params)
        self._requests_out = {
            s.name: s for s in table if s.handled_by in peer and s.kind == "request"
        }
        self._notifications_out = {
            s.name: s for s in table if s.handled_by in peer and s.kind == "notification"
        }

    def _initialize_request(
        self, rid: RequestId, raw_params: Any, method: str = "initialize"
    ) -> Event | None:
        """Agent side: choose the version, switch to its tables, decode in its shape.
        `method`: the handshake that came (one of HANDSHAKE_METHODS)."""
        requested = requested_version(raw_params)
        if requested is not None:
            chosen = negotiate(requested, self.versions)
            if chosen is None:
                self._queue_error(rid, unsupported_version(requested, self.versions))
                return None
            if self.initialized and chosen != self.version:
                self._queue_error(
                    rid,
                    RequestError(
                        INVALID_REQUEST,
                        "Invalid request: the protocol version of a connection cannot change",
                        {"version": self.version, "requested": requested},
                    ),
                )
                return None
            self._use_tables(chosen)
            self.version = chosen
            if chosen == 1 and requested >= 2:
                raw_params = _downgraded(raw_params)
        spec = self._requests_in.get(method)
        if spec is None:  # e.g. `proxy/initialize` in a version whose tables lack it
            self._queue_error(rid, RequestError.method_not_found(method))
            return None
        try:
            try:
                params = decode_typed(raw_params, spec.params, method)
            except RequestError:
                if self._table_version != 2:
                    raise
                params = decode_typed(_lenient_v2(raw_params), spec.params, method)
        except RequestError as err:
            log_refused(rid, method, err)
            self._queue_error(rid, err)
            return None
        # What the client advertised (the agent's own answer is recorded in `result`).
        self.peer_capabilities = advertised(params, self._table_version, "client")
        if not self.initialized:
            self.deferring = True  # what comes next waits until this is answered
            self._initialize_id = rid
        return IncomingRequest(rid, method, spec, params)

    def _initialize_response(self, call: PendingCall, raw_result: Any) -> Event | None:
        """Client side: the agent's answer chose the version; decode it in that shape and
        speak it from now on. A version we do not speak is decoded in v1's shape (and left
        for the caller to refuse: `AgentPeer.initialize` raises ProtocolVersionError)."""
        answered = requested_version(raw_result)
        asked = getattr(self._initialize_params, "protocol_version", 1)
        if not isinstance(asked, int) or answered is None or answered > asked:
            answered = None  # not an answer to what we asked: left for the caller to refuse
        version = answered if answered in self.versions else 1
        self._use_tables(version)
        spec = self._requests_out.get(call.method) or self._requests_out["initialize"]
        result_type = spec.result
        assert result_type is not None
        try:
            result = decode_typed(raw_result, result_type, call.method, result=True)
        except RequestError as err:
            return IncomingResponse(
                call, error=RequestError(err.code, "Invalid result from peer", err.data)
            )
        if answered in self.versions:
            self.version = version
        if version == 1 and isinstance(asked, int) and asked >= 2:
            # We asked in v2's shape and go on in v1: we offered what the agent read.
            self.local_capabilities = _v1_client_capabilities(self._initialize_params)
        self.peer_capabilities = advertised(result, version, "agent")
        self.initialized = True
        return IncomingResponse(call, result=result)


def _lenient_v2(raw_params: Any) -> Any:
    """v2 `initialize` params that do not decode: a missing or malformed `info` (required in
    v2) is taken as unknown and unusable capabilities as none, as the TypeScript SDK's
    router does (clients that send v1's shape with version 2 still get in)."""
    try:
        data = msgspec.json.decode(raw_params)
    except Exception:  # noqa: BLE001 - the strict decode's error stands
        return raw_params
    if not isinstance(data, dict):
        return raw_params
    info = data.get("info")
    if not (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        data["info"] = {"name": "unknown", "version": "unknown"}
    if "capabilities" in data and not isinstance(data["capabilities"], dict):
        del data["capabilities"]
    return msgspec.Raw(msgspec.json.encode(data))


def _downgraded(raw_params: Any) -> Any:
    """v2-shaped `initialize` params, rewritten for a v1 agent (raw JSON in, raw JSON out)."""
    try:
        data = msgspec.json.decode(raw_params)
    except Exception:  # noqa: BLE001 - the strict decode that follows reports it
        return raw_params
    if not isinstance(data, dict):
        return raw_params
    return msgspec.Raw(msgspec.json.encode(downgrade_initialize(data)))


def _v1_client_capabilities(params: Any) -> Any:
    """What a v1 agent read of our v2-shaped `initialize` (see `downgrade_initialize`)."""
    from acpstack.schema import v1

    data = downgrade_initialize(msgspec.to_builtins(params))
    return msgspec.convert(data["clientCapabilities"], v1.ClientCapabilities)


__all__ = ["HANDSHAKE_METHODS", "Negotiation"]
