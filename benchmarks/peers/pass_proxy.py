"""A proxy that changes nothing (for `python -m benchmarks.proxy_chain`)."""

from acpstack.proxy import Proxy

if __name__ == "__main__":
    Proxy().run()
