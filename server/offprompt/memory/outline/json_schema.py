"""JSON: its inferred schema (paths, types, sizes, one short example each) and where its records start.

The schema is read from the parsed value, sampling long arrays and maps, so it costs little more than the
parse; each path is placed at its first occurrence in the stored text by scanning only the containers on the
way there. The keys of a map at the top (an API's operations, a table keyed by id) and the elements of an
array of records at the top are entries of their own, each at the line where it starts, so a model can jump
to one by name: that also holds for JSON stored on one line, where only the token offsets differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from offprompt.memory.chunking.record_names import names
from offprompt.memory.outline.entries import Found, title

#: An object with at least this many keys whose values are all objects (or all arrays) is a map: its values
#: share one schema, shown under ``*``.
MAP_KEYS = 8
#: An object with more keys than this is a map whatever its values.
BIG_MAP = 40
#: Array elements and map values read for the schema.
SAMPLE = 40
MAX_DEPTH = 8
#: Keys of a top-level map, or elements of a top-level array of records, listed with their lines.
LISTED = 1000
_NAME_KEYS = ("name", "id", "title", "key", "type", "path", "url", "uri", "label")
_WS = " \t\r\n"

Path = tuple[str | int, ...]


@dataclass(slots=True)
class _Node:
    pattern: tuple[str, ...]
    first: Path
    types: dict[str, int] = field(default_factory=dict)
    example: str = ""
    sizes: list[int] = field(default_factory=list)  # keys of an object, items of an array (min, max)
    map_keys: list[str] = field(default_factory=list)
    map_size: int = 0


def outline(text: str) -> list[Found]:
    try:
        value = json.loads(text)
    except ValueError:
        return []
    nodes: dict[tuple[str, ...], _Node] = {}
    _walk(value, (), (), nodes, 0)
    places = _Places(text)
    plain_root = isinstance(value, dict) and not _is_map(value)
    out: list[Found] = []
    for node in nodes.values():
        if plain_root and not node.pattern:
            continue
        start, end = places.find(node.first)
        depth = len(node.pattern) - (1 if plain_root else 0)
        out.append(Found(_describe(node), "schema", depth, start, end))
    out.extend(_records(value, places, plain_root))
    out.sort(key=lambda f: (f.start, f.depth))
    return out


def _walk(value: Any, pattern: tuple[str, ...], path: Path, nodes: dict[tuple[str, ...], _Node], depth: int) -> None:
    node = nodes.get(pattern)
    if node is None:
        node = nodes[pattern] = _Node(pattern, path)
    kind = _type(value)
    node.types[kind] = node.types.get(kind, 0) + 1
    if depth >= MAX_DEPTH:
        return
    if isinstance(value, dict):
        _size(node, len(value))
        if _is_map(value):
            node.map_size = max(node.map_size, len(value))
            if not node.map_keys:
                node.map_keys = [str(k) for k in list(value)[:12]]
            for key, member in list(value.items())[:SAMPLE]:
                _walk(member, (*pattern, "*"), (*path, key), nodes, depth + 1)
        else:
            for key, member in value.items():
                _walk(member, (*pattern, str(key)), (*path, key), nodes, depth + 1)
    elif isinstance(value, list):
        _size(node, len(value))
        for index, member in enumerate(value[:SAMPLE]):
            _walk(member, (*pattern, "[]"), (*path, index), nodes, depth + 1)
    elif not node.example and value is not None:
        node.example = title(json.dumps(value, ensure_ascii=False), 40)


def _is_map(value: dict[str, Any]) -> bool:
    if len(value) > BIG_MAP:
        return True
    return len(value) >= MAP_KEYS and (
        all(isinstance(v, dict) for v in value.values()) or all(isinstance(v, list) for v in value.values())
    )


def _size(node: _Node, n: int) -> None:
    node.sizes = [min(node.sizes[0], n), max(node.sizes[1], n)] if node.sizes else [n, n]


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _name(pattern: tuple[str, ...]) -> str:
    name = ""
    for part in pattern:
        name += part if part == "[]" else (f".{part}" if name else part)
    return name or "$"


def _describe(node: _Node) -> str:
    types = " | ".join(node.types)
    detail = ""
    if node.sizes:
        low, high = node.sizes
        count = f"{low:,}" if low == high else f"{low:,}-{high:,}"
        if node.map_size:
            keys = ", ".join(node.map_keys)
            detail = f", map of {node.map_size:,} keys: {keys}"
        elif "array" in node.types:
            detail = f", {count} items"
        else:
            detail = f", {count} keys"
    elif node.example:
        detail = f" = {node.example}"
    return title(f"{_name(node.pattern)}: {types}{detail}")


def _records(value: Any, places: _Places, plain_root: bool) -> Iterator[Found]:
    """The keys of a top-level map and the elements of a top-level array, each with where it starts."""
    tops: list[tuple[Path, Any, int]] = [((), value, 1)]
    if plain_root:
        tops = [((key,), member, 1) for key, member in value.items()]
    for path, container, depth in tops:
        if isinstance(container, dict) and _is_map(container):
            keys = list(container)[:LISTED]
            for key, (start, end) in zip(keys, places.members(path, len(keys)), strict=False):
                yield Found(title(_name((*map(str, path), str(key)))), "key", depth, start, end)
        elif isinstance(container, list) and container and all(isinstance(v, dict) for v in container[:SAMPLE]):
            # Named as their chunks are (`installed[8] tzdata: Provider of IANA time zone data`), by what tells
            # them apart; records with no such member by a member called so (`id=1001`).
            named = names(container[:LISTED])
            for index, (start, end) in enumerate(places.members(path, min(len(container), LISTED))):
                record = container[index]
                label = f" {named[index]}" if named[index] else _label(record) if isinstance(record, dict) else ""
                yield Found(title(f"{_name(tuple(map(str, path)))}[{index}]{label}"), "record", depth, start, end)


def _label(record: dict[str, Any]) -> str:
    for key in (*_NAME_KEYS, *record):
        found = record.get(key)
        if isinstance(found, str | int | float) and not isinstance(found, bool):
            return f" {key}={title(json.dumps(found, ensure_ascii=False), 48)}"
    return ""


class _Places:
    """Character spans of values in the JSON text, found by scanning the containers on the path to them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.scanned: dict[int, list[tuple[str | int, int, int, int]]] = {}
        start = len(text) - len(text.lstrip(_WS))
        self.root = (start, len(text.rstrip(_WS)))

    def find(self, path: Path) -> tuple[int, int]:
        """Span of the member at ``path`` (from its key, for an object member); the root for ``()``."""
        span = self.root
        value = self.root[0]
        for part in path:
            found = next((m for m in self._members(value) if m[0] == part), None)
            if found is None:
                return span
            _, first, value, end = found
            span = (first, end)
        return span

    def members(self, path: Path, count: int) -> list[tuple[int, int]]:
        value = self.root[0]
        for part in path:
            found = next((m for m in self._members(value) if m[0] == part), None)
            if found is None:
                return []
            value = found[2]
        return [(first, end) for _, first, _, end in self._members(value)[:count]]

    def _members(self, value: int) -> list[tuple[str | int, int, int, int]]:
        """(key or index, member start, value start, value end) of the container at ``value``."""
        cached = self.scanned.get(value)
        if cached is not None:
            return cached
        text = self.text
        out: list[tuple[str | int, int, int, int]] = []
        is_object = text[value] == "{"
        pos = value + 1
        index = 0
        try:
            while True:
                while text[pos] in _WS or text[pos] == ",":
                    pos += 1
                if text[pos] in "]}":
                    break
                first = pos
                label: str | int = index
                if is_object:
                    label, pos = self.decoder.raw_decode(text, pos)
                    while text[pos] in _WS or text[pos] == ":":
                        pos += 1
                at = pos
                _, pos = self.decoder.raw_decode(text, pos)
                out.append((label, first, at, pos))
                index += 1
        except (ValueError, IndexError):
            pass
        self.scanned[value] = out
        return out
