"""Server-sent events, as remote ACP uses them: one JSON-RPC message per event's `data`.

Encoding is one line (`data: <json>\\n\\n`; JSON-RPC messages from an NDJSON stream hold no
line breaks), after the event's `id:` when the server numbers its events. Decoding follows
the SSE grammar: lines end in LF, CRLF or CR; comments (`:`), `event` and `retry` fields
are skipped; several `data` lines join with LF; the last `id` seen is `last_id` (what a
client sends as `Last-Event-ID` to resume).
It works on bytes, a chunk at a time, because a busy stream carries hundreds of events
per chunk and a text line decoder would cost more than the JSON that follows.
"""

from __future__ import annotations

SSE_KEEPALIVE = b":\n\n"
"""A comment event: sent on an idle stream so that proxies keep it open; readers skip it."""


def encode_event(message: bytes) -> bytes:
    return b"data: " + message + b"\n\n"


class SseError(ValueError):
    """The stream broke the SSE grammar or a size limit."""


class SseDecoder:
    def __init__(self, max_event_size: int) -> None:
        self._max = max_event_size
        self._buf = b""
        self._cr_pending = (
            False  # the last chunk ended in CR: a LF that starts the next one belongs to it
        )
        self._started = False
        self.last_id: str | None = None
        """The id of the last event that had one (None before any)."""
        self.after_id: int = 0
        """Events with data received after that one (a server may number only the first
        event of each batch: the position of the last event is then `last_id + after_id`)."""

    def reset(self) -> None:
        """A new stream starts (a resumed one): forget a partial event; keep `last_id`."""
        self._buf = b""
        self._cr_pending = False
        self._started = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The `data` of every event this chunk completes, in order."""
        if not self._started and chunk:
            self._started = True
            if chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
        if b"\r" in chunk or self._cr_pending:
            chunk = self._normalize(chunk)
        buf = self._buf + chunk if self._buf else chunk
        *blocks, rest = buf.split(b"\n\n")
        if len(rest) > self._max:
            raise SseError(f"an event is larger than {self._max} bytes")
        self._buf = rest
        out: list[bytes] = []
        last_id: bytes | None = None
        after = self.after_id
        for block in blocks:
            if block.startswith(b"id: "):  # the common case: one id line, one data line
                end = block.find(b"\n")
                if (
                    end > 0
                    and block.startswith(b"data: ", end + 1)
                    and b"\n" not in block[end + 1 :]
                ):
                    last_id, after = block[4:end], 0
                    out.append(block[end + 7 :])
                    continue
            elif block.startswith(b"data: ") and b"\n" not in block:
                out.append(block[6:])  # one data line
                after += 1
                continue
            data, event_id = _event_data(block)
            if event_id is not None:
                last_id, after = event_id, 0
            elif data is not None:
                after += 1
            if data is not None:
                out.append(data)
        if last_id is not None:
            self.last_id = last_id.decode("utf-8", "replace")
        self.after_id = after
        return out

    def feed_lines(self, chunk: bytes) -> bytes | None:
        """The common chunk of a busy stream, fast: when every event it completes is one
        `data` line, after an `id` line for the first event of a batch (as acpstack's
        server sends them), their data as NDJSON lines, each ending in LF (b"" when none
        completes; the rest is kept for the next chunk). None, consuming nothing, for any
        other chunk: `feed` takes it then. Equal to `feed`'s data joined with LF, with
        the same `last_id` and `after_id` after it, in a few passes of C per batch."""
        if not self._started or self._cr_pending or b"\r" in chunk:
            return None
        buf = self._buf + chunk if self._buf else chunk
        end = buf.rfind(b"\n\n")
        if end < 0:
            return None
        whole = buf[:end]
        last_id: bytes | None = None
        if whole.startswith(b"id: ") or b"\n\nid: " in whole:
            # batches: an id line, then its events (the first may have none before it)
            batches = whole.split(b"\n\nid: ")
            runs = [] if whole.startswith(b"id: ") else [batches.pop(0)]
            if runs == []:
                batches[0] = batches[0][4:]
            for batch in batches:
                line = batch.find(b"\n")
                if line <= 0 or not batch[:line].isdigit():
                    return None
                last_id = batch[:line]
                runs.append(batch[line + 1 :])
            whole = b"\n\n".join(runs)
            after = runs[-1].count(b"\n\n")  # the events after the last numbered one
        # one data line each: every separator is followed by `data: `, no other LF (a
        # JSON-RPC message holds none; a second line would be another field)
        breaks = whole.count(b"\n\n")
        if (
            not whole.startswith(b"data: ")
            or whole.count(b"\n\ndata: ") != breaks
            or whole.count(b"\n") != 2 * breaks
        ):
            return None
        rest = buf[end + 2 :]
        if len(rest) > self._max:
            raise SseError(f"an event is larger than {self._max} bytes")
        self._buf = rest
        if last_id is None:
            self.after_id += breaks + 1
        else:
            self.last_id, self.after_id = last_id.decode(), after
        return whole[6:].replace(b"\n\ndata: ", b"\n") + b"\n"

    def position(self) -> str | None:
        """What to send as `Last-Event-ID` to resume after the last event received: the
        last id, moved on by the events after it when ids are positions (numbers)."""
        last = self.last_id
        if last is None or not self.after_id:
            return last
        return str(int(last) + self.after_id) if last.isdigit() else last

    def _normalize(self, chunk: bytes) -> bytes:
        if self._cr_pending and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr_pending = chunk.endswith(b"\r")
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _event_data(block: bytes) -> tuple[bytes | None, bytes | None]:
    """The event's data (None: no data field) and its id (None: no id field)."""
    data: list[bytes] = []
    event_id: bytes | None = None
    for line in block.split(b"\n"):
        if line == b"data":
            data.append(b"")
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line.startswith(b"id:") and b"\0" not in line:
            value = line[3:]
            event_id = value[1:] if value.startswith(b" ") else value
        elif line == b"id":
            event_id = b""
    return (b"\n".join(data) if data else None), event_id
