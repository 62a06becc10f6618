"""JSON as a tree of units: the members of each container, their keys or indexes as labels."""

from __future__ import annotations

import json
from collections.abc import Callable

from offprompt.memory.chunking.record_names import RecordNames
from offprompt.memory.chunking.units import Node, shorten

_WS = " \t\r\n"


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
        named = RecordNames()  # an array's elements, named as they are decoded
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
                if not is_object:
                    named.add(member)
                index += 1
        except (ValueError, IndexError):
            return []
        # Members that are mostly objects or arrays are records (a table's rows, an API's operations).
        records = len(found) >= 3 and sum(1 for _, at, _, _ in found if text[at] in "[{") >= 0.8 * len(found)
        if records and not is_object:
            # An element's index says nothing of what it is: its name does, in the context of every chunk cut from it.
            labelled = zip(found, named.names(), strict=True)
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
