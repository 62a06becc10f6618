"""A downstream MCP server that writes a string it is given wherever a client will see it: a tool's result (its
text, or structured content nested `depth` deep), its error (a JSON-RPC error, or an `isError` result), a log
message or a progress message sent before the result; and a fixed one in its resource (name, URI, contents) and
its prompt (description, message).

    python tests/servers/raw_strings.py [escaped|raw]

It speaks JSON-RPC over stdio by hand, so it writes strings no SDK server can: lone surrogates, as JSON escapes
(`"\\udfff"`, `escaped`) or as their bytes (b"\\xed\\xbf\\xbf", `raw`: no UTF-8), and raw bytes that are no UTF-8
at all (`latin1`, tools only). The client sends the string JSON-encoded in `text` (its own line stays valid
Unicode), and the tool writes it, the planted AWS key and it again, apart by spaces: a secret in a hostile string.
"""

from __future__ import annotations

import json
import sys
from typing import Any

AWS_KEY = "AKIAQX7Z3N5B2LMRTW4E"
#: What the resource and the prompt hold: a lone low surrogate, then the key.
LONE = f"\udfff lone {AWS_KEY}"
WIRE = sys.argv[1] if len(sys.argv) > 1 else "escaped"
PLACES = ("result", "structured", "is_error", "error", "log", "progress")
sys.setrecursionlimit(10_000)  # structured content nested deep


def send(message: dict[str, Any], wire: str = WIRE) -> None:
    if wire == "raw":  # each surrogate as the three bytes UTF-8 would give it, were it a character
        data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    elif wire == "latin1":  # what a server that writes bytes of another encoding sends
        data = json.dumps(message, ensure_ascii=False).encode("latin-1", "replace")
    else:
        data = json.dumps(message).encode()
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def nested(text: str, depth: int) -> object:
    """`{"s": text}` inside `depth` objects."""
    value: object = {"s": text}
    for _ in range(depth):
        value = {"a": value}
    return value


def emit(request_id: object, params: dict[str, Any]) -> None:
    """Answer an `emit` call, writing the string where its arguments say (nested `depth` deep in an error's data,
    a log's data, or the structured content)."""
    arguments = params.get("arguments") or {}
    given = json.loads(arguments.get("text", '""'))
    text = f"{given} {AWS_KEY} {given}"
    where, wire, depth = arguments.get("where", "result"), arguments.get("wire", WIRE), int(arguments.get("depth", 1))
    token = (params.get("_meta") or {}).get("progressToken")
    if where == "error":
        error = {"code": -32000, "message": text, "data": nested(text, depth)}
        send({"jsonrpc": "2.0", "id": request_id, "error": error}, wire)
        return
    if where == "log":
        log = {"level": "error", "logger": text, "data": nested(text, depth)}
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": log}, wire)
    if where == "progress" and token is not None:
        progress = {"progressToken": token, "progress": 1, "total": 2, "message": text}
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}, wire)
    result: dict[str, Any] = {"content": [{"type": "text", "text": text if where in ("result", "is_error") else where}]}
    if where == "is_error":
        result["isError"] = True
    if where == "structured":
        result["structuredContent"] = nested(text, depth)
    send({"jsonrpc": "2.0", "id": request_id, "result": result}, wire)


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request other than a tool call, or None for a method this server does not have."""
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "where": {"enum": list(PLACES)},
            "depth": {"type": "integer"},
            "wire": {"enum": ["escaped", "raw", "latin1"]},
        },
    }
    uri = f"raw://{WIRE}/\udfff"
    results: dict[str, dict[str, Any]] = {
        "initialize": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
            "serverInfo": {"name": "raw-strings", "version": "1"},
        },
        "tools/list": {"tools": [{"name": "emit", "description": "Writes `text` back.", "inputSchema": schema}]},
        "resources/list": {"resources": [{"uri": uri, "name": LONE, "description": LONE, "mimeType": "text/plain"}]},
        "resources/templates/list": {"resourceTemplates": []},
        "resources/read": {"contents": [{"uri": params.get("uri", uri), "mimeType": "text/plain", "text": LONE}]},
        "prompts/list": {"prompts": [{"name": "note", "description": LONE}]},
        "prompts/get": {
            "description": LONE,
            "messages": [{"role": "user", "content": {"type": "text", "text": LONE}}],
        },
        "logging/setLevel": {},
        "ping": {},
    }
    return results.get(method)


def serve() -> None:
    for line in sys.stdin.buffer:
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        if request_id is None:
            continue
        params = request.get("params") or {}
        if method == "tools/call":
            emit(request_id, params)
            continue
        result = answer(method, params)
        if result is None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    serve()
