"""A downstream MCP server that puts secrets where a result's text is not: its JSON-RPC errors, the URIs and
names of its links and resources, and its `_meta`.

    python tests/servers/hostile.py RECORD_FILE

It speaks JSON-RPC over stdio by hand, so its errors carry exactly the code it is told (`error(code)`, `data`
quoting the key as well): -32000 is the usual generic server error and must not read as "the server stopped".
`weird` answers content blocks of no MCP type; `deep(levels)` structured content nested that deep.
`links` answers a resource link and an embedded resource whose URIs hold keys, as a presigned URL does.
`echo` appends its arguments to RECORD_FILE and answers them as text, to see what offprompt forwards.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

AWS_KEY = "AKIAQX7Z3N5B2LMRTW4E"
GITHUB_TOKEN = "ghp_" + "Zq7sKc2Vw9LmXb4Tn8Rd1Hf6Jy3Pg5Ae0Ui2"
sys.setrecursionlimit(10_000)  # `deep` writes JSON 1,000 levels deep
RECORD = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("hostile.jsonl")
TOOLS = ("error", "sensitive_error", "links", "weird", "deep", "echo")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def links() -> dict[str, object]:
    return {
        "content": [
            {"type": "text", "text": "two files"},
            {
                "type": "resource_link",
                "uri": f"https://bucket.example/report.csv?X-Amz-Credential={AWS_KEY}&sig=1",
                "name": f"report for {GITHUB_TOKEN}",
                "description": f"signed with {AWS_KEY}",
            },
            {
                "type": "resource",
                "resource": {"uri": f"file:///x?token={GITHUB_TOKEN}", "mimeType": "text/plain", "text": "ok"},
            },
        ],
        "_meta": {"download": f"https://h.example/?key={AWS_KEY}", "progressToken": "kept-as-is"},
    }


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    params = request.get("params") or {}
    if method == "initialize":
        result: dict[str, object] = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"code": {"type": "integer"}, "text": {"type": "string"}}}
        result = {"tools": [{"name": name, "inputSchema": schema} for name in TOOLS]}
    elif method == "tools/call" and params["name"] in ("error", "sensitive_error"):
        code = int(params.get("arguments", {}).get("code", -32000))
        error = {"code": code, "message": f"failed for TOPSECRET {AWS_KEY}", "data": {"key": AWS_KEY}}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})
        continue
    elif method == "tools/call" and params["name"] == "links":
        result = links()
    elif method == "tools/call" and params["name"] == "deep":  # structured content nested `levels` deep
        nested: object = {"api_token": GITHUB_TOKEN}
        for _ in range(int(params.get("arguments", {}).get("levels", 500))):
            nested = {"a": nested}
        result = {"content": [{"type": "text", "text": "deep"}], "structuredContent": nested}
    elif method == "tools/call" and params["name"] == "weird":  # content blocks no client can read
        result = {"content": [{"type": "weird", "text": "?"}, {"type": "text"}]}
    elif method == "tools/call":
        arguments = params.get("arguments", {})
        with RECORD.open("a") as out:
            out.write(json.dumps(arguments) + "\n")
        result = {"content": [{"type": "text", "text": json.dumps(arguments)}]}
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
