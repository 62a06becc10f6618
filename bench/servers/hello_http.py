"""A bare MCPServer with one trivial tool over streamable HTTP: the baseline for offprompt's HTTP cost.

`python -m bench.servers.hello_http` listens on 127.0.0.1, a free port, and prints `hello-http: serving MCP at
URL` on stderr once it accepts connections. The app is the SDK's own `streamable_http_app()` with its defaults
(sessions for 2025-11-25 clients, single requests for 2026-07-28 ones, its DNS-rebinding checks), served by
uvicorn as `MCPServer.run_streamable_http_async` serves it, except that the access log is off, as it is in
`offprompt serve` (a line per request is not what either side is measured for).
"""

import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("hello-http")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


class _Announcing(uvicorn.Server):
    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        host, port = sockets[0].getsockname()[:2] if sockets else ("127.0.0.1", 0)
        print(f"hello-http: serving MCP at http://{host}:{port}/mcp", file=sys.stderr, flush=True)


def _listen() -> socket.socket:
    """A socket on a free port, bound as uvicorn binds a host and port. Not `socket.create_server`: its socket's
    proto is 0, asyncio then leaves TCP_NODELAY off on the connections it accepts, and every answer waits ~40 ms
    for the client's delayed ACK."""
    family, kind, proto, _, address = socket.getaddrinfo("127.0.0.1", 0, type=socket.SOCK_STREAM)[0]
    listener = socket.socket(family, kind, proto)
    listener.bind(address)
    listener.listen(2048)
    return listener


async def main() -> None:
    listener = _listen()
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    with listener:
        await _Announcing(config).serve(sockets=[listener])


if __name__ == "__main__":
    asyncio.run(main())
