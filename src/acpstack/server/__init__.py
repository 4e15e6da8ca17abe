"""Remote ACP, the server side: serve an agent over streamable HTTP and WebSocket.

`AgentServer` is an ASGI 3 application (mount it in Starlette, FastAPI or any ASGI
server); `serve_remote` runs it on uvicorn (the `remote` extra). Each connection gets its
own agent: a new `Agent` from the factory you pass, or a new process of a stdio agent
command. See docs/remote.md.
"""

from acpstack.server._app import AgentServer
from acpstack.server._limits import ServerLimits
from acpstack.server._run import bind_socket, serve_remote
from acpstack.server._security import ServerSecurity, is_loopback

__all__ = [
    "AgentServer",
    "ServerLimits",
    "ServerSecurity",
    "bind_socket",
    "is_loopback",
    "serve_remote",
]
