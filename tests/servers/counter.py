"""A small downstream MCP server for the proxy tests.

It appends a line to the file named by COUNTER_LOG each time it starts (one
process, one `initialize`), so a test can count how often the proxy connected,
and to the file named by COUNTER_EVENTS when it is ready (after waiting
COUNTER_START_DELAY seconds) and what befalls a `sleep` call.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import SamplingMessage, TextContent

server = MCPServer("counter")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def lines(count: int) -> str:
    """`count` numbered log lines: a large text result on demand."""
    return "".join(f"2026-11-30T00:00:{i % 60:02d} INFO worker-{i % 7} handled request {i}\n" for i in range(count))


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named `extra`, and tell the client the tool list changed."""
    server.add_tool(lambda: "extra tool", name="extra", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling), through offprompt; its answer."""
    reply = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=64
    )
    content = reply.content
    return f"the model said: {content.text if isinstance(content, TextContent) else content}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Answer after `seconds`: a slow tool to cancel."""
    _event("sleep started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _event("sleep cancelled")
        raise
    return "slept"


@server.tool()
def wide(size: int) -> str:
    """`size` characters of one line with no white space (`zzz…`), said in COUNTER_EVENTS as it is answered."""
    _event("wide answered")
    return "z" * size


def _event(what: str) -> None:
    events = os.environ.get("COUNTER_EVENTS")
    if events:
        with Path(events).open("a") as f:
            f.write(f"{what}\n")


@server.tool()
async def wedge(size: int) -> str:
    """Write `size` bytes of a message and never end it (no newline), then hang: a wedged server."""
    # On the wire itself: the SDK points file descriptor 1 at stderr while it serves, from a copy of its own.
    os.write(_WIRE, b'{"jsonrpc": "2.0", "result": "' + b"x" * size)
    # The whole process hangs, not this call alone: were its loop free, an answer it still owed (to a request
    # offprompt sent at start) would end the unfinished line, and the stream would no longer be wedged.
    time.sleep(3600)  # noqa: ASYNC251 - blocking is the point
    return "never"


@server.tool()
def crash() -> str:
    """Exit at once, mid-call."""
    os._exit(3)


@server.tool()
def fail(reason: str) -> str:
    """Always fails, as a tool error."""
    raise ToolError(reason)


_WIRE = os.dup(1)  # the client's pipe, before the SDK diverts fd 1

if __name__ == "__main__":
    log = os.environ.get("COUNTER_LOG")
    if log:
        with Path(log).open("a") as f:
            f.write(f"{os.getpid()}\n")
    # A server that takes long to come up (an `npx -y` one downloading itself on its first run).
    time.sleep(float(os.environ.get("COUNTER_START_DELAY", "0")))
    _event("ready")
    print("counter ready", file=sys.stderr)
    server.run()
