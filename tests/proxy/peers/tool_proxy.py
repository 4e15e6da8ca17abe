"""A proxy that offers the agent one MCP tool (`shout`) over MCP-over-ACP."""

from acpstack.proxy import Proxy, tool


class Tools(Proxy):
    name = "tools"

    @tool
    def shout(self, text: str) -> str:
        """The text in capitals."""
        return text.upper() + "!"


if __name__ == "__main__":
    Tools().run()
