"""Stanzas of `Key: value` lines, one record per stanza, a blank line (or pip's `---`) between them: apt's
`history.log` (Start-Date, Commandline, Install, Upgrade, …, End-Date), Debian control files and `dpkg -s`,
`apt show`, `pip show`. A line that starts with a space continues the value above it.

A value that is a list of names, each with its details in brackets or not, as apt's `Install: libc6:amd64
(2.36-9, automatic), zlib1g:amd64 (1:1.2.13)`, a control file's `Depends: libc6 (>= 2.34), zlib1g` and pip's
`Requires: idna, urllib3` are, is read as an array of `{"name", "details"}`: a field that lists two names or more
in some stanza is an array in every stanza (one name a one-item array, empty `[]`), so `.Install | length` counts
a run's packages; a field that never does stays text (`Requested-By: ada (1000)`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record, Value
from offprompt.memory.records.values import typed

_FIELD: Final = re.compile(r"^(?P<k>[A-Za-z][\w.-]{0,40}):(?:\s(?P<v>.*)|\s*)$")
_SEPARATOR: Final = re.compile(r"^(?:\s*|-{3,})$")
#: One item of a list value: a name (no spaces, commas or brackets) and its details in brackets.
_ITEM: Final = re.compile(r"^(?P<name>[^\s,()]+)(?: \((?P<details>[^()]*)\))?$")
#: Stanzas of the head needed, and the share of their lines that must be `Key: value` or a continuation.
_MIN_STANZAS: Final = 2
_SHARE: Final = 0.9


class StanzasReader:
    """Blank-line separated stanzas of `Key: value` lines."""

    name = "file of `Key: value` stanzas"
    what = "stanzas"

    def fits(self, lines: Sequence[str]) -> bool:
        stanzas = list(_stanzas(lines))
        if len(stanzas) < _MIN_STANZAS:
            return False
        rows = [row for _, block in stanzas for row in block]
        fields = sum(1 for row in rows if _FIELD.match(row))
        continued = sum(1 for row in rows if row[:1] in (" ", "\t"))
        # A key in two stanzas at least: records of one shape, not a page of `Note: …` lines.
        held = Counter(key for _, block in stanzas for key in _keys(block))
        repeated = any(count >= 2 for count in held.values())
        return repeated and fields + continued >= _SHARE * len(rows) and fields >= len(stanzas)

    def read(self, text: str) -> Iterator[Record]:
        stanzas = [(line, _fields(block)) for line, block in _stanzas(text.split("\n"))]
        # A field is a list where some stanza lists two names or more in it (`Requested-By: ada (1000)` alone
        # stays text).
        listed = {key for _, fields in stanzas for key, value in fields.items() if len(_items(value) or ()) > 1}
        for line, fields in stanzas:
            if fields:
                record: Record = {"line": line}
                for key, value in fields.items():
                    record[key] = _listed(value) if key in listed else typed(value)
                yield record


def _stanzas(lines: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    block: list[str] = []
    start = 0
    for n, row in enumerate(lines, start=1):
        if _SEPARATOR.match(row):
            if block:
                yield start, block
            block = []
        else:
            if not block:
                start = n
            block.append(row.rstrip())
    if block:
        yield start, block


def _keys(block: Sequence[str]) -> set[str]:
    return {found.group("k") for found in map(_FIELD.match, block) if found is not None}


def _fields(block: Sequence[str]) -> dict[str, str]:
    """A stanza's fields as written, a continuation line joined to the value above it (as Description's are)."""
    fields: dict[str, str] = {}
    key = ""
    for row in block:
        found = _FIELD.match(row)
        if found is not None:
            key = found.group("k")
            fields[key] = (found.group("v") or "").strip()
        elif key:
            fields[key] += "\n" + row.strip()
    return fields


def _listed(text: str) -> list[Value]:
    if not text:
        return []
    return _items(text) or [{"name": text, "details": None}]


def _items(text: str) -> list[Value] | None:
    """`a (1), b (2, x)` as `[{"name": "a", "details": "1"}, …]`, None when the text is not such a list."""
    items: list[Value] = []
    for part in _top_level_split(text):
        found = _ITEM.match(part.strip())
        if found is None:
            return None
        items.append({"name": found.group("name"), "details": found.group("details")})
    return items or None


def _top_level_split(text: str) -> list[str]:
    """The text split at commas outside brackets (`1,234` is one number, not a list: items follow `, `)."""
    parts, depth, start = [], 0, 0
    for k, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0 and text[k + 1 : k + 2] == " ":
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts
