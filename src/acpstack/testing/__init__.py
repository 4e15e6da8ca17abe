"""Helpers for testing ACP code: an Agent and a Client connected in one process."""

from acpstack.testing._pair import ConnectedPair, connected_pair

__all__ = ["ConnectedPair", "connected_pair"]
