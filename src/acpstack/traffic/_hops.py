"""One view of a proxy chain's hops: the recordings `acpstack conduct --record DIR` keeps
(`0-proxy.jsonl` ... `N-agent.jsonl`, one per component, the conductor on the "client"
side of each) merged in time order, each record labelled with its hop.

Every recorder stamps a frame when it sees it, on the same clock, so a message that
crosses the chain shows up hop after hop in the order it travelled. `proxy/successor`
envelopes are shown with the method they carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acpstack.traffic._analyze import TrafficAnalyzer
from acpstack.traffic._record import Record, RecordingError, obj, read_recording

_HOP_FILE = re.compile(r"^(\d+)-(proxy|agent)\.jsonl$")
_ENVELOPES = frozenset({"proxy/successor", "_proxy/successor"})


@dataclass
class HopRecord:
    """A record of one hop's recording."""

    hop: int
    """The component's position: 0 nearest the client."""
    component: str
    """"proxy 0", "proxy 1", ..., or "agent"."""
    record: Record

    @property
    def sender(self) -> str:
        """Who wrote the frame: the conductor or the component."""
        return "conductor" if self.record.side == "client" else self.component

    @property
    def receiver(self) -> str:
        """Who the frame was written to."""
        return self.component if self.record.side == "client" else "conductor"

    def to_json(self) -> dict[str, Any]:
        """The record's line of a recording with `hop` and `component` added."""
        return {"hop": self.hop, "component": self.component, **self.record.to_json()}


def read_hops(directory: Path) -> list[HopRecord]:
    """The records of every hop recording in `directory`, merged in time order (ties
    keep hop order). Raises `RecordingError` when it holds none, or one is malformed."""
    found: list[tuple[int, str, Path]] = []
    for path in directory.iterdir():
        match = _HOP_FILE.match(path.name)
        if match:
            hop, kind = int(match[1]), match[2]
            found.append((hop, "agent" if kind == "agent" else f"proxy {hop}", path))
    if not found:
        raise RecordingError(f"no hop recordings (0-proxy.jsonl ... N-agent.jsonl) in {directory}")
    merged: list[HopRecord] = []
    for hop, component, path in sorted(found):
        try:
            records = read_recording(path)
        except RecordingError as exc:
            raise RecordingError(f"{path.name}: {exc}") from None
        merged.extend(HopRecord(hop, component, record) for record in records)
    merged.sort(key=lambda item: item.record.ts)  # stable: hop order on a tie
    return merged


def describe(record: Record) -> str:
    """A short account of one record: the kind of message, its id, its method (an
    envelope's inner method after `⟨`) and what it says in a few words."""
    if record.stderr is not None:
        return f"stderr: {record.stderr}"
    if record.raw is not None:
        return f"not a message ({record.problem}): {record.raw[:80]}"
    message = obj(record.message)
    method, params = message.get("method"), obj(message.get("params"))
    shown = str(method)
    if method in _ENVELOPES:
        method, params = params.get("method"), obj(params.get("params"))
        shown += f" ⟨{method}⟩"
    if isinstance(method, str):
        summary = TrafficAnalyzer._summary(method, params)
        detail = f"  {summary}" if summary != method else ""
        if "id" in message:
            return f"request #{message['id']} {shown}{detail}"
        return f"notification {shown}{detail}"
    if "error" in message:
        error = obj(message["error"])
        return f"error #{message.get('id')} {error.get('code')}: {error.get('message')}"
    return (
        f"result #{message.get('id')} {TrafficAnalyzer._result_summary(obj(message.get('result')))}"
    )


def hop_lines(hops: list[HopRecord]) -> list[str]:
    """One line per record: milliseconds since the first, hop, who to whom, and what."""
    if not hops:
        return []
    start = hops[0].record.ts
    width = max(len("conductor"), *(len(hop.component) for hop in hops))
    return [
        f"{(hop.record.ts - start) * 1000:10.3f} ms  hop {hop.hop}  "
        f"{hop.sender:>{width}} → {hop.receiver:<{width}}  {describe(hop.record)}"
        for hop in hops
    ]
