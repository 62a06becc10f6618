"""A downstream MCP server that records the exact arguments of every tool call it gets.

    python tests/servers/recorder.py RECORD_FILE

It speaks JSON-RPC over stdio by hand (an SDK server would check the arguments against the schema and might
drop unknown ones before a test could see them, or parse a JSON string for an object parameter). Each call
appends its `arguments` object as one JSON line to RECORD_FILE: `read` answers with the text of the file at
`path`, `post` (a `body` object) with "posted".
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

POST = {
    "name": "post",
    "description": "Post a JSON object.",
    "inputSchema": {"type": "object", "properties": {"body": {"type": "object"}}, "required": ["body"]},
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
        result = {"tools": [READ, POST]}
    elif method == "tools/call":
        arguments = request["params"].get("arguments", {})
        with RECORD.open("a") as f:
            f.write(json.dumps(arguments) + "\n")
        if request["params"].get("name") == "post":
            text = "posted"
        else:
            text = Path(str(arguments.get("path", ""))).read_text(encoding="utf-8")
        result = {"content": [{"type": "text", "text": text}]}
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
