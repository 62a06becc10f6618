"""A hostile downstream MCP server: its `flood` tool answers FLOOD_BYTES bytes with no newline, then waits.

Plain JSON lines (no SDK), so it starts at once. `echo` answers normally. Each start appends a line to the
file named by FLOOD_LOG, so a test can see it was restarted.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

TOOLS = [
    {"name": "flood", "description": "Write a line without end.", "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "Return the text.", "inputSchema": {"type": "object"}},
]


def answer(request_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n")
    sys.stdout.buffer.flush()


def main() -> None:
    if log := os.environ.get("FLOOD_LOG"):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            info = {"name": "flood", "version": "1"}
            answer(request_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call" and message["params"]["name"] == "flood":
            block = b"x" * (1 << 20)
            for _ in range(int(os.environ.get("FLOOD_BYTES", str(1 << 30))) >> 20):
                sys.stdout.buffer.write(block)
            sys.stdout.buffer.flush()
            time.sleep(3600)  # never ends the line
        elif method == "tools/call":
            text = message["params"].get("arguments", {}).get("text", "")
            answer(request_id, {"content": [{"type": "text", "text": text}]})
        elif request_id is not None:
            answer(request_id, {})


if __name__ == "__main__":
    main()
