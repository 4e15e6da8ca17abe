"""A proxy that changes nothing (for `python -m benchmarks.proxy_chain`): run as a process,
or loaded by `acpstack conduct --proxy-module` into the conductor's process."""

from acpstack.proxy import Proxy


class Pass(Proxy):
    """Overrides nothing: every message passes through."""


if __name__ == "__main__":
    Pass().run()
