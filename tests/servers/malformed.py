"""A downstream MCP server that answers `reveal` with a malformed tool result holding a secret, and `fail` with
its own error result quoting the secret.

It speaks JSON-RPC over stdio by hand (an SDK server could not send a malformed result) and, before the
answer, writes a line that is not JSON and holds the secret too.
"""

from __future__ import annotations

import json
import sys

SECRET = "SECRET-7f3k9q2m"


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
            "serverInfo": {"name": "malformed", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("reveal", "fail")]}
    elif method == "tools/call" and request["params"]["name"] == "fail":
        result = {"content": [{"type": "text", "text": f"access denied for {SECRET}"}], "isError": True}
    elif method == "tools/call":
        sys.stdout.write(f"debug: about to reveal {SECRET}\n")
        result = {"content": [{"type": "text", "text": {"value": SECRET}}]}
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
