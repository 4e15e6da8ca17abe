"""Local work on behalf of an agent: files inside a workspace, terminals, orphan reaping.

Used by the client runtime to serve ``fs/*`` and ``terminal/*``, and by agents that do
the work themselves when the client offers no such capability. `Workspace` resolves and
uses a path in one race-free step (see its module doc for the guarantees and limits),
`FileSystem` reads and atomically writes text files inside one, `TerminalManager` runs
processes and ends them together with whatever left their process group, and
`become_subreaper` / `end_orphans` let a process adopt and end orphaned descendants.
"""

from acpstack.local._fs import TEMP_MARKER, BufferProvider, FileSystem, WriteObserver
from acpstack.local._reaper import MARKER_VARIABLE, become_subreaper, end_orphans, is_subreaper
from acpstack.local._terminals import TerminalExit, TerminalManager, TerminalOutput
from acpstack.local._workspace import Location, Workspace

__all__ = [
    "MARKER_VARIABLE",
    "TEMP_MARKER",
    "BufferProvider",
    "FileSystem",
    "Location",
    "TerminalExit",
    "TerminalManager",
    "TerminalOutput",
    "Workspace",
    "WriteObserver",
    "become_subreaper",
    "end_orphans",
    "is_subreaper",
]
