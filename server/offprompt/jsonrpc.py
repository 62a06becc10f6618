"""JSON-RPC lines as both sides of the proxy read and write them: fast (orjson), never refusing valid JSON."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """Compact JSON, fast (orjson), falling back to the standard library for what orjson refuses."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer over 64 bits, a lone surrogate
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN, lone surrogates: valid to Python's json
        return json.loads(data)
