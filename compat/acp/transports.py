"""`acp.transports`: the stdio process transport under its official module name."""

from acp.stdio import default_environment, spawn_stdio_transport

__all__ = ["default_environment", "spawn_stdio_transport"]
