"""JSON-RPC lines as both sides of the proxy read and write them: fast (orjson), never refusing valid JSON, and
always Unicode text.

A lone UTF-16 surrogate ("\\udfff", or its three bytes) is valid JSON to Python's parser but no character: UTF-8
cannot hold it, and pydantic, orjson and every SQLite or file write refuse it. So no string holding one gets past
this module: `decode` reads each as U+FFFD and says where it was (a client's request holding one is refused from
that, `invalid_request`); `loads` (a downstream's lines) replaces them too, and any bytes that are no UTF-8; `dumps`
writes U+FFFD for any that offprompt made itself.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

PARSE_ERROR = -32700
INVALID_PARAMS = -32602


def _max_line_bytes() -> int:
    value = os.environ.get("OFFPROMPT_MAX_LINE_BYTES", "")
    return int(value) if value.isdigit() and int(value) > 0 else 1 << 30


#: The longest JSON-RPC line offprompt reads, from its client or from a downstream server (a screenshot, a big
#: file fit; a longer line is refused, not buffered). OFFPROMPT_MAX_LINE_BYTES sets another.
MAX_LINE_BYTES = _max_line_bytes()
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: How many places of lone surrogates a decoded message names (the rest are replaced all the same).
_MAX_PLACES = 16


def dumps(value: Any) -> bytes:
    """Compact JSON in UTF-8, fast (orjson), falling back to the standard library for what orjson refuses; a lone
    surrogate is written as U+FFFD."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer over 64 bits, a lone surrogate
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return _LONE_SURROGATE.sub("\ufffd", text).encode()


class Decoded(NamedTuple):  # a tuple: one is made for every line a client sends
    """A line's JSON value, every lone surrogate in it replaced by U+FFFD, and where those were."""

    value: Any
    #: Where lone surrogates were, as paths like "id" or "params.arguments.text" (the first few, outer first).
    replaced: tuple[str, ...] = ()


def decode(data: bytes | str) -> Decoded:
    """The JSON value of a line, as Unicode text (`Decoded`); ValueError if it is not JSON (bytes that are no UTF-8
    among them), or nests deeper than the parsers go."""
    try:
        return Decoded(orjson.loads(data))  # refuses lone surrogates: none in what it reads
    except orjson.JSONDecodeError:  # NaN, big integers, lone surrogates: valid to Python's json
        return _decode_standard(data)


def loads(data: bytes | str) -> Any:
    """The JSON value of a line as Unicode text: lone surrogates, and bytes that are no UTF-8 (a server writing
    Latin-1), read as U+FFFD. ValueError if it is not JSON, or nests deeper than the parsers go."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return _decode_standard(data).value
    except UnicodeDecodeError:
        assert isinstance(data, bytes | bytearray)
        return _decode_standard(bytes(data).decode("utf-8", "replace")).value


def _decode_standard(data: bytes | str) -> Decoded:
    """What orjson refused, read by the standard library (slower, and it takes lone surrogates: they are replaced)."""
    if isinstance(data, bytes | bytearray):
        data = bytes(data).decode("utf-8", "surrogatepass")  # a surrogate's own bytes read as it: replaced below
    try:
        value = json.loads(data)
    except RecursionError:  # orjson stops at depth 1024; the standard library runs out of stack
        raise ValueError("JSON nested too deeply (more than 1024 levels)") from None
    if depth(value) > MAX_DEPTH:  # the recursion limit may be set higher than orjson's depth
        raise ValueError("JSON nested too deeply (more than 1024 levels)")
    return _without_lone_surrogates(value)


#: A `\uXXXX` escape of a lone surrogate: a high one not followed by a low one, a low one not after a high one.
#: It starts with its literal `\u`, which the regex engine looks for fast (a lookbehind first would make it try
#: every byte): 2 MB of escaped Japanese are read in milliseconds.
_LONE_ESCAPE = re.compile(
    rb"\\u(?:[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u)[dD][c-fC-F][0-9a-fA-F]{2})"
)


def _fffd_escape(match: re.Match[bytes]) -> bytes:
    """U+FFFD's escape for a lone surrogate's, unless its backslash is itself escaped (`\\ud800` is text)."""
    text, at = match.string, match.start()
    while at and text[at - 1] == 0x5C:  # the backslashes right before it
        at -= 1
    return match[0] if (match.start() - at) % 2 else b"\\ufffd"


def unicode_json(text: bytes) -> bytes:
    """JSON text in any framing (a body, server-sent event lines; whole lines, so no escape is cut) with each lone
    surrogate, escaped or as its bytes, and each byte that is no UTF-8, made U+FFFD; everything else kept, byte for
    byte. For a parser that refuses them (pydantic's reads an HTTP server's answers) and loses the whole message."""
    if not text.isascii():
        try:
            text.decode()
        except UnicodeDecodeError:
            try:
                read = text.decode("utf-8", "surrogatepass")  # a surrogate's bytes: one U+FFFD, as `loads` reads it
            except UnicodeDecodeError:
                read = text.decode("utf-8", "replace")
            text = _LONE_SURROGATE.sub("\ufffd", read).encode()
    if (b"\\ud" not in text and b"\\uD" not in text) or _LONE_ESCAPE.search(text) is None:
        return text  # no escape of a surrogate (nor of Hangul, U+D000-D7FF): the common case, at memchr speed
    return _LONE_ESCAPE.sub(_fffd_escape, text)


def _without_lone_surrogates(value: Any) -> Decoded:
    """`value` with every lone surrogate in its strings and keys replaced, in place, outer levels first (so a
    message's own members are named before what nests in them)."""
    places: list[str] = []

    def fixed(text: str, place: str) -> str:
        if _LONE_SURROGATE.search(text) is None:
            return text
        if len(places) < _MAX_PLACES:
            places.append(place)
        return _LONE_SURROGATE.sub("\ufffd", text)

    if isinstance(value, str):
        return Decoded(fixed(value, ""), tuple(places))
    queue: deque[tuple[Any, str]] = deque([(value, "")])
    while queue:
        container, path = queue.popleft()
        if isinstance(container, dict):
            items = list(container.items())
            container.clear()
            for key, item in items:
                place = f"{path}.{key}" if path else str(key)
                key = fixed(key, place)
                container[key] = fixed(item, place) if isinstance(item, str) else item
                if isinstance(item, dict | list):
                    queue.append((item, place))
        elif isinstance(container, list):
            for index, item in enumerate(container):
                if isinstance(item, str):
                    container[index] = fixed(item, f"{path}[{index}]")
                elif isinstance(item, dict | list):
                    queue.append((item, f"{path}[{index}]"))
    return Decoded(value, tuple(places))


def lone_surrogate_places(value: Any) -> tuple[str, ...]:
    """Where in a parsed message lone surrogates are (`params.uri`), replacing them in place: what
    `invalid_request` takes as `replaced`."""
    return _without_lone_surrogates(value).replaced


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


def invalid_request(message: Any, replaced: Sequence[str] = ()) -> dict[str, Any] | None:
    """The answer refusing a client's message, or None for one to serve. -32600 for an invalid message (with its id
    when it has a usable one) or one whose id or method held a lone surrogate; -32602 for a request whose params
    held one (`replaced`: `Decoded.replaced`), as its arguments are not what the client meant. A notification or a
    response holding one elsewhere is served, with U+FFFD in its place."""
    problem, code = invalid_message(message), INVALID_REQUEST
    spoilt = [place for place in replaced if re.split(r"[.\[]", place, maxsplit=1)[0] in ("jsonrpc", "id", "method")]
    if problem is None and spoilt:
        problem = f"{spoilt[0]} holds {_LONE}"
    elif problem is None and replaced and "id" in message and "method" in message:
        problem, code = f"{replaced[0]} holds {_LONE}; send whole characters, or U+FFFD in its place", INVALID_PARAMS
    if problem is None:
        return None
    usable = isinstance(message, dict) and _is_id(message.get("id")) and "id" not in spoilt
    error = {
        "code": code,
        "message": f"{'Invalid Request' if code == INVALID_REQUEST else 'Invalid params'}: {problem}",
    }
    return {"jsonrpc": "2.0", "id": message["id"] if usable else None, "error": error}


_LONE = "a lone surrogate (half of a UTF-16 pair on its own: no character, and no UTF-8 text can hold one)"


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
