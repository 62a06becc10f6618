"""A downstream MCP server over streamable HTTP that records the headers of every request it gets.

    python tests/servers/headers.py RECORD_FILE

It listens on a free port of 127.0.0.1, prints `listening at http://127.0.0.1:PORT/mcp` on stderr once it
listens, and appends one JSON object per HTTP request (header names lower-cased) to RECORD_FILE.
Its one tool, `echo`, returns its text unchanged.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

server = MCPServer("headers")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


class RecordHeaders:
    def __init__(self, app: ASGIApp, record: Path) -> None:
        self.app = app
        self.record = record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers: dict[str, list[str]] = {}
            for name, value in scope["headers"]:
                headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
            with self.record.open("a") as out:
                out.write(json.dumps({"method": scope["method"], "path": scope["path"], "headers": headers}) + "\n")
        await self.app(scope, receive, send)


async def main(record: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    app = RecordHeaders(server.streamable_http_app(), record)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    # The socket already listens: connections made from now on wait in its backlog until uvicorn serves them.
    print(f"listening at http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve([listener])


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
