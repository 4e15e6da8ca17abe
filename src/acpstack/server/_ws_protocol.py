"""uvicorn's sans-IO WebSocket protocol with ACP's hot path made short (`serve_remote` runs it).

uvicorn hands every message to the application through an `asyncio.Queue` (and pauses and
resumes reading the socket around each one), and takes every message to send through an
`await send(...)`; `websockets` parses and makes each frame with generators and objects.
For one JSON-RPC message per frame each way, that was most of a round trip's time on the
server. Here:

- whole text frames are cut and unmasked by `WebSocketFrames` (every other frame, whole,
  goes to `websockets` as before: control frames, binary and fragmented messages, limits);
- the application may take the socket over (`DirectSocket`, offered in
  `scope["extensions"]["acpstack.websocket"]` once the handshake is accepted): text
  messages are then handed to its callback as they are read, as bytes, and it writes its
  messages' frames itself. Everything else (the handshake, the close, disconnects) still
  goes through ASGI, and an application that ignores the extension sees plain ASGI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from acpstack.transports import RawFrame, WebSocketFrames

DIRECT_EXTENSION = "acpstack.websocket"


class DirectSocket(Protocol):
    """The socket of an accepted WebSocket, for an application that takes it over."""

    def take_over(self, on_text: Callable[[bytes], None], on_writable: Callable[[], None]) -> None:
        """From now on every text message goes to `on_text` (valid UTF-8, not decoded), not
        to ASGI's `receive`; `on_writable` is called when the socket can take more after
        `can_write` said False."""

    def send_texts(self, messages: list[bytes]) -> bool:
        """Send these text messages (one frame each) now; False once the socket closes."""

    def can_write(self) -> bool:
        """Whether the socket's write buffer is below its high-water mark."""

    def pause_reading(self) -> None:
        """Stop reading the socket (what is already read still arrives)."""

    def resume_reading(self) -> None:
        """Read the socket again."""


def direct_protocol(base: Any) -> Any:
    """`base` (uvicorn's `WebSocketsSansIOProtocol`) with the changes the module doc lists."""

    class DirectWebSocketProtocol(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._frames = WebSocketFrames(client=False, max_size=self.config.ws_max_size)
            self._on_text: Callable[[bytes], None] | None = None
            self._on_writable: Callable[[], None] | None = None
            self._paused_by_app = False

        def handle_connect(self, event: Any) -> None:
            super().handle_connect(event)
            scope = getattr(self, "scope", None)
            if scope is not None:  # the request was a WebSocket handshake
                scope["extensions"][DIRECT_EXTENSION] = self

        def data_received(self, data: bytes) -> None:
            if not self.handshake_initiated:  # the handshake request (uvicorn feeds it whole)
                super().data_received(data)
                return
            for frame in self._frames.split(data):
                if self.close_sent or self.transport.is_closing():
                    return  # as uvicorn: nothing more once the close began
                if type(frame) is RawFrame:
                    super().data_received(frame)
                elif self._on_text is not None and (frame.isascii() or _utf8(frame)):
                    self._on_text(frame)
                else:  # ASGI's way; invalid UTF-8 closes with 1007 there
                    self.curr_msg_data_type = "text"
                    self.frames = [frame]
                    self.send_receive_event_to_app()

        # -- DirectSocket --------------------------------------------------------------

        def take_over(
            self, on_text: Callable[[bytes], None], on_writable: Callable[[], None]
        ) -> None:
            self._on_text, self._on_writable = on_text, on_writable

        def send_texts(self, messages: list[bytes]) -> bool:
            if self.close_sent or self.disconnected or self.transport.is_closing():
                return False
            self.transport.write(self._frames.text_frames(messages))
            return True

        def can_write(self) -> bool:
            return bool(self.writable.is_set())

        def pause_reading(self) -> None:
            if not self._paused_by_app and not self.transport.is_closing():
                self._paused_by_app = True
                self.transport.pause_reading()

        def resume_reading(self) -> None:
            if self._paused_by_app:
                self._paused_by_app = False
                if not self.transport.is_closing():
                    self.transport.resume_reading()

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._on_writable is not None:
                self._on_writable()

    return DirectWebSocketProtocol


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
