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
        return json.loads(data)
    except RecursionError:  # orjson stops at depth 1024; the standard library runs out of stack
        raise ValueError("JSON nested too deeply (more than 1024 levels)") from None
