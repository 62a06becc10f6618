"""A downstream MCP server that hangs: `freeze` stops the whole process (SIGSTOP), as a deadlock would, so it
reads and answers nothing more, though it never exits. A fresh process answers again."""

from __future__ import annotations

import os
import signal

from mcp.server.mcpserver import MCPServer

server = MCPServer("hung")


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def freeze() -> str:
    """Stop answering anything, for good."""
    os.kill(os.getpid(), signal.SIGSTOP)
    return "never said"


if __name__ == "__main__":
    server.run()
