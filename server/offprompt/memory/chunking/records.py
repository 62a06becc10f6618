"""JSON as a tree of units: the members of each container, their keys or indexes as labels."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from offprompt.memory.chunking.units import Node, shorten

_WS = " \t\r\n"
#: A record's name is found among its string members this many objects deep (``metadata.name`` is two).
NAME_DEPTH = 2
#: A name is a short string holding a letter; the phrase beside it (a summary, a title) a few words on one line.
MAX_NAME_CHARS = 60
MAX_PHRASE_CHARS = 100
PHRASE_WORDS = 3
#: The key column is looked for in this many records: a million-row array is named as fast as a short one.
NAME_SAMPLE = 200


class JsonRecords:
    """Members of JSON containers as nodes that cover the container's text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()

    def members(self, start: int, end: int, value: int | None = None) -> list[Node]:
        """Nodes covering ``text[start:end]``, one per member of the container there (or at ``value``).

        Empty when it holds a scalar or is not well-formed.
        """
        text = self.text
        pos = start if value is None else value
        while pos < end and text[pos] in _WS:
            pos += 1
        if pos >= end or text[pos] not in "[{":
            return []
        is_object = text[pos] == "{"
        pos += 1
        found: list[tuple[int, int, int, str]] = []  # (member start, value start, value end, label)
        values: list[Any] = []
        index = 0
        try:
            while True:
                while pos < end and text[pos] in _WS + ",":
                    pos += 1
                if pos >= end or text[pos] in "]}":
                    break
                first = pos
                if is_object:
                    key, pos = self.decoder.raw_decode(text, pos)
                    while text[pos] in _WS + ":":
                        pos += 1
                    label = str(key)
                else:
                    label = f"[{index}]"
                at = pos
                member, pos = self.decoder.raw_decode(text, pos)
                found.append((first, at, pos, label))
                values.append(member)
                index += 1
        except (ValueError, IndexError):
            return []
        # Members that are mostly objects or arrays are records (a table's rows, an API's operations).
        records = len(found) >= 3 and sum(1 for _, at, _, _ in found if text[at] in "[{") >= 0.8 * len(found)
        if records and not is_object:
            # An element's index says nothing of what it is: its name does, in the context of every chunk cut from it.
            labelled = zip(found, names(values), strict=True)
            found = [(a, at, b, f"{label} {name}".rstrip()) for (a, at, b, label), name in labelled]
        nodes: list[Node] = []
        for k, (first, at, _, label) in enumerate(found):
            a = start if k == 0 else first
            b = end if k + 1 == len(found) else found[k + 1][0]
            nodes.append(Node(a, b, shorten(label), self._expander(a, b, at), record=records))
        return nodes

    def _expander(self, start: int, end: int, value: int) -> Callable[[], list[Node]] | None:
        if self.text[value] not in "[{":
            return None
        return lambda: self.members(start, end, value)


def names(records: list[Any]) -> list[str]:
    """What names each record, read from the records themselves: the value of their key column (the first short
    string member, in text order, that differs in every record) and the first phrase of a few words beside it
    (``tzdata: Provider of IANA time zone data``). Empty for every record when they have no key column."""
    sample = [dict(_strings(r, ())) if isinstance(r, dict) else {} for r in records[:NAME_SAMPLE]]
    key = next((path for path in sample[0] if _is_key(path, sample)), None) if sample else None
    if key is None:
        return [""] * len(records)
    out: list[str] = []
    for record in records:
        holder: Any = record
        for part in key[:-1]:
            holder = holder.get(part) if isinstance(holder, dict) else None
        name = holder.get(key[-1]) if isinstance(holder, dict) else None
        if not isinstance(name, str):
            out.append("")
            continue
        phrase = next((v for v in holder.values() if v is not name and _is_phrase(v)), None)
        out.append(f"{name}: {phrase}" if phrase else name)
    return out


def _strings(value: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """The short string members of an object and of the objects in it, down to `NAME_DEPTH`, in text order."""
    for key, member in value.items():
        if isinstance(member, str) and _is_name(member):
            yield (*path, key), member
        elif isinstance(member, dict) and len(path) + 1 < NAME_DEPTH:
            yield from _strings(member, (*path, key))


def _is_key(path: tuple[str, ...], sample: list[dict[tuple[str, ...], str]]) -> bool:
    seen = [row.get(path) for row in sample]
    return None not in seen and len(set(seen)) == len(seen)


def _is_name(value: str) -> bool:
    return len(value) <= MAX_NAME_CHARS and "\n" not in value and any(c.isalpha() for c in value)


def _is_phrase(value: Any) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= MAX_PHRASE_CHARS
        and "\n" not in value
        and len(value.split()) >= PHRASE_WORDS
    )
