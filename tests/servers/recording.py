"""A stdio MCP server that records the arguments of every tool call it gets, to check what offprompt forwards.

    python tests/servers/recording.py RECORD_FILE

Each call appends one JSON line `{"tool": ..., "arguments": ...}` to RECORD_FILE. `echo` and `show` return their
text unchanged (the config marks `show` as one whose secrets pass); `use` answers "done"; `refuse` fails with a
protocol error quoting its text; `post` takes a JSON object, `upload` a base64 string (its schema says so),
`picture` answers with a PNG of `size` bytes. Files next to RECORD_FILE read as resources `files://{name}` and
come in the prompt `review(name)`, as a filesystem server's would.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Image, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

RECORD = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("recorded.jsonl")
server = MCPServer("recording")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _record(tool: str, arguments: dict[str, Any]) -> None:
    with RECORD.open("a") as out:
        out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    _record("echo", {"text": text})
    return text


@server.tool()
def show(text: str) -> str:
    """Return the text unchanged (its secrets are meant for the user)."""
    _record("show", {"text": text})
    return text


@server.tool()
def use(url: str, headers: dict[str, str], notes: list[str]) -> str:
    """Pretend to call an API with these credentials."""
    _record("use", {"url": url, "headers": headers, "notes": notes})
    return "done"


@server.tool()
def post(body: dict[str, Any]) -> str:
    """Post a JSON object, as an issue tracker's API takes one."""
    _record("post", {"body": body})
    return "posted"


@server.tool()
def upload(name: str, data: Annotated[str, Field(json_schema_extra={"contentEncoding": "base64"})]) -> str:
    """Upload a file's bytes, given in base64."""
    _record("upload", {"name": name, "data": data})
    return f"uploaded {len(base64.b64decode(data))} bytes"


@server.tool()
def picture(size: int) -> Image:
    """A PNG of `size` bytes (a signature, then zeros): a screenshot to store."""
    return Image(data=PNG_SIGNATURE + bytes(max(size - len(PNG_SIGNATURE), 0)), format="png")


@server.tool()
def refuse(text: str) -> str:
    """Fail with a protocol error that quotes the text, as a server rejecting a credential may."""
    _record("refuse", {"text": text})
    raise MCPError(INVALID_PARAMS, f"rejected: {text}")


@server.resource("files://{name}", mime_type="text/plain")
def file(name: str) -> str:
    """A file next to the record, as a filesystem server serves it."""
    return (RECORD.parent / name).read_text()


@server.prompt()
def review(name: str) -> str:
    """Ask for a review of a file next to the record, its text in the prompt."""
    return f"Review this config file:\n{(RECORD.parent / name).read_text()}"


if __name__ == "__main__":
    server.run()
