"""`CapabilityError`, in a module of its own: mypyc cannot compile a class built on
RuntimeError, so this one stays interpreted when the rest of `wire/` is compiled."""


class CapabilityError(RuntimeError):
    """Raised instead of sending a call the peer did not advertise (or before initialize)."""
