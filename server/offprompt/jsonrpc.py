"""JSON-RPC lines as both sides of the proxy read and write them: fast (orjson), never refusing valid JSON."""

from __future__ import annotations

import json
import os
from typing import Any

import orjson

PARSE_ERROR = -32700


def _max_line_bytes() -> int:
    value = os.environ.get("OFFPROMPT_MAX_LINE_BYTES", "")
    return int(value) if value.isdigit() and int(value) > 0 else 1 << 30


#: The longest JSON-RPC line offprompt reads, from its client or from a downstream server (a screenshot, a big
#: file fit; a longer line is refused, not buffered). OFFPROMPT_MAX_LINE_BYTES sets another.
MAX_LINE_BYTES = _max_line_bytes()


def dumps(value: Any) -> bytes:
    """Compact JSON, fast (orjson), falling back to the standard library for what orjson refuses."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer over 64 bits, a lone surrogate
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """The JSON value of a line; ValueError if it is not JSON, or nests deeper than the parsers go."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN, lone surrogates: valid to Python's json
        pass
    try:
        value = json.loads(data)
    except RecursionError:  # orjson stops at depth 1024; the standard library runs out of stack
        raise ValueError("JSON nested too deeply (more than 1024 levels)") from None
    if depth(value) > MAX_DEPTH:  # the recursion limit may be set higher than orjson's depth
        raise ValueError("JSON nested too deeply (more than 1024 levels)")
    return value


INVALID_REQUEST = -32600


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_message(message: Any) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 request, notification or response, or None when it is one. (MCP has no
    batches: a list is invalid too.)"""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {type(message).__name__ if message is not None else 'null'}"
    if message.get("jsonrpc") != "2.0":
        return 'a message must say "jsonrpc": "2.0"'
    if "id" in message and not _is_id(message["id"]) and not (message["id"] is None and "method" not in message):
        return "an id is a string or an integer"
    if "method" in message:
        return None if isinstance(message["method"], str) else "a method is a string"
    if "result" in message or "error" in message:
        return None
    return "a message needs a method (a request or notification) or a result or error (a response)"


def invalid_request(message: Any) -> dict[str, Any] | None:
    """The -32600 answer to an invalid message (its id when it has a usable one), or None for a valid one."""
    problem = invalid_message(message)
    if problem is None:
        return None
    request_id = message.get("id") if isinstance(message, dict) and _is_id(message.get("id")) else None
    error = {"code": INVALID_REQUEST, "message": f"Invalid Request: {problem}"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


#: The deepest nesting offprompt reads (orjson's own limit, and the documented one of the fast lane).
MAX_DEPTH = 1024
#: The deepest nesting the SDK's models serialize (pydantic-core stops near 255): what the SDK path can answer.
MODEL_MAX_DEPTH = 200


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep a JSON value nests (a scalar is 0), counted without recursion; stops counting past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest
