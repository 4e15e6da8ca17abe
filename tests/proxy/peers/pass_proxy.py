"""A proxy that changes nothing: every message is forwarded as it came."""

from acpstack.proxy import Proxy

if __name__ == "__main__":
    Proxy().run()
