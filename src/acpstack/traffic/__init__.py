"""ACP traffic: `acpstack inspect` (a transparent stdio proxy that records every frame and
shows it live in a browser) and `acpstack replay` (send a recording's client side to an
agent again and report where the answers differ)."""

from acpstack.traffic._analyze import TrafficAnalyzer
from acpstack.traffic._hops import HopRecord, hop_lines, read_hops
from acpstack.traffic._record import Record, RecordingError, RecordingWriter, read_recording
from acpstack.traffic._replay import Difference, ReplayReport, replay_recording
from acpstack.traffic._session import inspect_agent, view_recording
from acpstack.traffic._web import LiveServer

__all__ = [
    "Difference",
    "HopRecord",
    "LiveServer",
    "Record",
    "RecordingError",
    "RecordingWriter",
    "ReplayReport",
    "TrafficAnalyzer",
    "hop_lines",
    "inspect_agent",
    "read_hops",
    "read_recording",
    "replay_recording",
    "view_recording",
]
