"""Local work on behalf of an agent: files inside a workspace, terminals, orphan reaping.

Used by the client runtime to serve ``fs/*`` and ``terminal/*``, and by agents that do
the work themselves when the client offers no such capability. `Workspace` resolves and
uses a path in one race-free step (see its module doc for the guarantees and limits),
`FileSystem` reads and atomically writes text files inside one, and `TerminalManager`
runs processes.
"""

from acpstack.local._fs import TEMP_MARKER, BufferProvider, FileSystem, WriteObserver
from acpstack.local._terminals import TerminalExit, TerminalManager, TerminalOutput
from acpstack.local._workspace import Location, Workspace

__all__ = [
    "TEMP_MARKER",
    "BufferProvider",
    "FileSystem",
    "Location",
    "TerminalExit",
    "TerminalManager",
    "TerminalOutput",
    "Workspace",
    "WriteObserver",
]
