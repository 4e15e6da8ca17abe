"""acpstack: the Agent Client Protocol stack for Python."""

__version__ = "0.1.0"
