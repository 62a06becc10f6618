"""Stanzas of `Key: value` lines, one record per stanza, a blank line (or pip's `---`) between them: apt's
`history.log` (Start-Date, Commandline, Install, Upgrade, …, End-Date), Debian control files and `dpkg -s`,
`apt show`, `pip show`. A line that starts with a space continues the value above it.

A value that is a list of names, each with its details in brackets or not, as apt's `Install: libc6:amd64
(2.36-9, automatic), zlib1g:amd64 (1:1.2.13)`, a control file's `Depends: libc6 (>= 2.34), zlib1g` and pip's
`Requires: idna, urllib3` are, is read as an array of `{"name", "details"}`, and so is that field in every stanza
once it is in one (empty as `[]`), so `.Install | length` counts a run's packages."""

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
        records = [_record(line, block) for line, block in _stanzas(text.split("\n"))]
        listed = {key for record in records for key, value in record.items() if isinstance(value, list)}
        for record in records:
            for key in listed & record.keys():
                value = record[key]
                if value is None:
                    record[key] = []
                elif not isinstance(value, list):
                    record[key] = _items(str(value)) or [{"name": str(value), "details": None}]
        yield from (record for record in records if len(record) > 1)


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


def _record(line: int, block: Sequence[str]) -> Record:
    fields: dict[str, list[str]] = {}
    key = ""
    for row in block:
        found = _FIELD.match(row)
        if found is not None and not row[:1].isspace():
            key = found.group("k")
            fields.setdefault(key, []).append(found.group("v") or "")
        elif key:
            fields[key][-1] += "\n" + row.strip()  # a continuation line, as Description's are
    record: Record = {"line": line}
    for name, values in fields.items():
        record[name] = _value(values[-1])
    return record


def _value(text: str) -> Value:
    text = text.strip()
    if ("(" in text or ", " in text) and (items := _items(text)):
        return items
    return typed(text)


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
