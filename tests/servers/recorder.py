"""A downstream MCP server that records the exact arguments of every tool call it gets.

    python tests/servers/recorder.py RECORD_FILE

It speaks JSON-RPC over stdio by hand (an SDK server would check the arguments against the schema and might
drop unknown ones before a test could see them). Its one tool, `read`, appends its `arguments` object as one
JSON line to RECORD_FILE and answers with the text of the file at `path`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORD = Path(sys.argv[1])
READ = {
    "name": "read",
    "description": "Read a text file.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        result: dict[str, object] = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "recorder", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [READ]}
    elif method == "tools/call":
        arguments = request["params"].get("arguments", {})
        with RECORD.open("a") as f:
            f.write(json.dumps(arguments) + "\n")
        text = Path(str(arguments.get("path", ""))).read_text(encoding="utf-8")
        result = {"content": [{"type": "text", "text": text}]}
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
