"""A downstream MCP server that writes a string it is given wherever a client will see it: a tool's result (its
text, or structured content nested `depth` deep), its error (a JSON-RPC error, or an `isError` result), a log
message or a progress message sent before the result; and a fixed one in its resource (name, URI, contents) and
its prompt (description, message).

    python tests/servers/raw_strings.py [escaped|raw] [stdio|http|sse]

Over stdio, or on a free port of 127.0.0.1 (it prints `listening at URL` on stderr) over streamable HTTP, each
answer a stream of server-sent events (a call's notifications, then its answer), or over the legacy SSE transport.

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
TRANSPORT = sys.argv[2] if len(sys.argv) > 2 else "stdio"
PLACES = ("result", "structured", "is_error", "error", "log", "progress")
sys.setrecursionlimit(10_000)  # structured content nested deep


Reply = tuple[dict[str, Any], str]
"""A message this server writes, and how (`escaped`, `raw`, `latin1`)."""


def encoded(message: dict[str, Any], wire: str) -> bytes:
    if wire == "raw":  # each surrogate as the three bytes UTF-8 would give it, were it a character
        return json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if wire == "latin1":  # what a server that writes bytes of another encoding sends
        return json.dumps(message, ensure_ascii=False).encode("latin-1", "replace")
    return json.dumps(message).encode()


def nested(text: str, depth: int) -> object:
    """`{"s": text}` inside `depth` objects."""
    value: object = {"s": text}
    for _ in range(depth):
        value = {"a": value}
    return value


def emit(request_id: object, params: dict[str, Any]) -> list[Reply]:
    """Answer an `emit` call, writing the string where its arguments say (nested `depth` deep in an error's data,
    a log's data, or the structured content)."""
    arguments = params.get("arguments") or {}
    given = json.loads(arguments.get("text", '""'))
    text = f"{given} {AWS_KEY} {given}"
    where, wire, depth = arguments.get("where", "result"), arguments.get("wire", WIRE), int(arguments.get("depth", 1))
    token = (params.get("_meta") or {}).get("progressToken")
    if where == "error":
        error = {"code": -32000, "message": text, "data": nested(text, depth)}
        return [({"jsonrpc": "2.0", "id": request_id, "error": error}, wire)]
    replies: list[Reply] = []
    if where == "log":
        log = {"level": "error", "logger": text, "data": nested(text, depth)}
        replies.append(({"jsonrpc": "2.0", "method": "notifications/message", "params": log}, wire))
    if where == "progress" and token is not None:
        progress = {"progressToken": token, "progress": 1, "total": 2, "message": text}
        replies.append(({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}, wire))
    result: dict[str, Any] = {"content": [{"type": "text", "text": text if where in ("result", "is_error") else where}]}
    if where == "is_error":
        result["isError"] = True
    if where == "structured":
        result["structuredContent"] = nested(text, depth)
    return [*replies, ({"jsonrpc": "2.0", "id": request_id, "result": result}, wire)]


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


def replies(request: dict[str, Any]) -> list[Reply]:
    """What this server writes for a message it reads: nothing for a notification."""
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        return []
    params = request.get("params") or {}
    if method == "tools/call":
        return emit(request_id, params)
    result = answer(str(method), params)
    if result is None:
        return [({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}}, WIRE)]
    return [({"jsonrpc": "2.0", "id": request_id, "result": result}, WIRE)]


def serve_stdio() -> None:
    for line in sys.stdin.buffer:
        for message, wire in replies(json.loads(line)):
            sys.stdout.buffer.write(encoded(message, wire) + b"\n")
            sys.stdout.buffer.flush()


def serve_http(legacy_sse: bool) -> None:
    """Streamable HTTP at /mcp: each POST answered by a stream of events. Or (`legacy_sse`) the SSE transport of
    2024-11-05: GET /sse is the one event stream, which names the URL to POST to; answers come on the stream."""
    import asyncio
    import socket

    import uvicorn
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse

    stream: asyncio.Queue[bytes] = asyncio.Queue()

    def event(name: str, data: bytes) -> bytes:
        return f"event: {name}\ndata: ".encode() + data + b"\n\n"

    async def events() -> Any:
        yield event("endpoint", b"/messages")
        while True:
            yield await stream.get()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        response: Response
        if legacy_sse and request.method == "GET":
            response = StreamingResponse(events(), media_type="text/event-stream")
        elif request.method != "POST":
            response = Response(status_code=405)  # no stream of its own to listen to
        else:
            written = [event("message", encoded(m, wire)) for m, wire in replies(json.loads(await request.body()))]
            if legacy_sse or not written:
                for one in written if legacy_sse else []:
                    stream.put_nowait(one)
                response = Response(status_code=202)
            else:
                response = Response(b"".join(written), media_type="text/event-stream")
        await response(scope, receive, send)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    path = "sse" if legacy_sse else "mcp"
    print(f"listening at http://127.0.0.1:{listener.getsockname()[1]}/{path}", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run([listener])


if __name__ == "__main__":
    serve_http(TRANSPORT == "sse") if TRANSPORT in ("http", "sse") else serve_stdio()
