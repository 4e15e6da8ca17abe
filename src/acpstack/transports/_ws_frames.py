"""WebSocket frames on the hot path (RFC 6455, section 5.2), beside the `websockets` sans-IO
protocol that does everything else.

ACP's WebSocket profile sends one JSON-RPC message per text frame, so almost every frame is
a whole text message. `websockets` parses each frame with generators and objects (about as
much time as the rest of a round trip on the server); `WebSocketFrames` takes that common
case itself and hands every other frame, whole, to the `websockets` protocol, which so
always sits at a frame boundary and keeps doing what it does: control frames (ping, pong,
close), binary and fragmented messages, size limits, protocol errors, extensions.

Reading: `split` cuts the bytes into whole frames. A frame with FIN set, no RSV bit and the
text opcode, masked as the side expects, outside a fragmented message, comes out as its
unmasked payload; any other whole frame comes out as `RawFrame` bytes for the protocol. Bytes of
an incomplete frame wait for the rest (a frame header announcing more than `max_size`
switches to passing everything through, so the protocol refuses it with 1009 before
anything is buffered). Writing: `text_frames` makes the frames of text messages (masked
with a fresh random key each, on a client).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Final

from acpstack.transports._extras import require_extra

_TEXT_FIN: Final = 0x81  # FIN, no RSV bit, opcode 1 (text)


class RawFrame(bytes):
    """A whole frame (header included) for the `websockets` protocol."""

    __slots__ = ()


class WebSocketFrames:
    """Frame splitting and making for one WebSocket connection; `client`: this end is the
    client (it masks what it sends, and expects unmasked frames)."""

    __slots__ = (
        "_client",
        "_max",
        "_held",
        "_need",
        "_fragmented",
        "passthrough",
        "_mask",
        "_keys",
        "_key_at",
    )

    def __init__(self, *, client: bool, max_size: int) -> None:
        self._client = client
        self._max = max_size
        self._held = bytearray()  # the start of a frame that has not fully arrived
        self._need = 0  # bytes the held frame needs in all (0: its header is incomplete)
        self._fragmented = False  # a fragmented message is going to the protocol
        self.passthrough: bool = False  # every byte goes to the protocol from now on
        apply_mask: Callable[[bytes, bytes], bytes] = require_extra("websockets.frames").apply_mask
        self._mask = apply_mask
        self._keys = b""  # masking keys from the OS's random source, 4 bytes each
        self._key_at = 0

    def split(self, data: bytes) -> list[bytes]:
        """The frames completed by `data`, in order: text payloads (`bytes`) and `RawFrame`."""
        if self.passthrough:
            return [RawFrame(data)]
        held = self._held
        if held:
            held += data
            if len(held) < self._need:
                return []
            data = bytes(held)
            held.clear()
            self._need = 0
        out: list[bytes] = []
        pos, end = 0, len(data)
        expect_mask = 0 if self._client else 0x80
        while end - pos >= 2:
            first, second = data[pos], data[pos + 1]
            length, head = second & 0x7F, 2
            if length == 126:
                if end - pos < 4:
                    break
                length, head = int.from_bytes(data[pos + 2 : pos + 4], "big"), 4
            elif length == 127:
                if end - pos < 10:
                    break
                length, head = int.from_bytes(data[pos + 2 : pos + 10], "big"), 10
            masked = second & 0x80
            if masked:
                head += 4
            if length > self._max:  # the protocol refuses it (1009); nothing is held
                self.passthrough = True
                out.append(RawFrame(data[pos:]))
                return out
            stop = pos + head + length
            if stop > end:
                self._need = stop - pos
                break
            if first == _TEXT_FIN and masked == expect_mask and not self._fragmented:
                payload = data[pos + head : stop]
                if masked:
                    payload = self._mask(payload, data[pos + head - 4 : pos + head])
                out.append(payload)
            else:
                if first & 0x0F in (0, 1, 2):  # continuation, text, binary
                    self._fragmented = not first & 0x80
                out.append(RawFrame(data[pos:stop]))
            pos = stop
        if pos < end:
            held += data[pos:]
        return out

    def _next_key(self) -> bytes:
        """A fresh masking key: unpredictable (RFC 6455 §5.3), drawn from the OS's random
        source 1,024 keys at a time rather than with a system call per frame."""
        at = self._key_at
        if at >= len(self._keys):
            self._keys, at = os.urandom(4096), 0
        self._key_at = at + 4
        return self._keys[at : at + 4]

    def text_frames(self, messages: Iterable[bytes]) -> bytes:
        """The frames of these text messages, one each, ready to write."""
        parts: list[bytes] = []
        mask_bit = 0x80 if self._client else 0
        for payload in messages:
            size = len(payload)
            if size < 126:
                parts.append(bytes((_TEXT_FIN, mask_bit | size)))
            elif size < 65536:
                parts.append(bytes((_TEXT_FIN, mask_bit | 126)) + size.to_bytes(2, "big"))
            else:
                parts.append(bytes((_TEXT_FIN, mask_bit | 127)) + size.to_bytes(8, "big"))
            if self._client:
                key = self._next_key()
                parts.append(key)
                parts.append(self._mask(payload, key))
            else:
                parts.append(payload)
        return b"".join(parts)
