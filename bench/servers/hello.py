"""A bare hello-world MCPServer over stdio: the baseline for start-up and per-call cost.

`echo` answers a tiny result; `text` answers `n_bytes` of plain text, for passthrough of larger results;
`sleep` is a call still in flight when a stop is measured; `digest` takes a text and answers its size and
SHA-256, a small answer that proves what arrived (a stored output passed on by reference).
"""

import hashlib

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("hello")

_LINE = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.\n"


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
def text(n_bytes: int) -> str:
    """Return `n_bytes` of plain English text."""
    return (_LINE * (n_bytes // len(_LINE) + 1))[:n_bytes]


@server.tool(structured_output=False)
def digest(text: str) -> str:
    """The text's size in bytes and its SHA-256."""
    data = text.encode("utf-8")
    return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Answer after `seconds`: a call in flight when a stop is measured."""
    await anyio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run()
