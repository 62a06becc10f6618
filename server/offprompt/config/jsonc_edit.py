"""Edits to a JSON or JSONC text at a key path that leave every other character as it was: comments, order,
layout and whatever the file holds besides the edited member."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from offprompt.config.jsonc import strip_jsonc

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class _Member:
    name: str
    key_start: int
    value_start: int
    value_end: int


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _members(clean: str, opening: int) -> list[_Member]:
    """The members of the object whose `{` is at `opening`, in the comment-free text."""
    found = []
    i = _skip(clean, opening + 1)
    while i < len(clean) and clean[i] != "}":
        key_start = i
        name, i = _DECODER.raw_decode(clean, i)
        i = _skip(clean, _skip(clean, i) + 1)  # past the colon
        start = i
        _, i = _DECODER.raw_decode(clean, i)
        found.append(_Member(str(name), key_start, start, i))
        i = _skip(clean, i)
        if clean[i] == ",":
            i = _skip(clean, i + 1)
    return found


def _object_at(clean: str, at: Sequence[str]) -> tuple[int, int] | None:
    """Where the object at key path `at` opens and closes (`{` and `}`), or None when a step is missing."""
    opening = _skip(clean, 0)
    for key in at:
        if clean[opening] != "{":
            return None
        member = next((m for m in _members(clean, opening) if m.name == key), None)
        if member is None:
            return None
        opening = member.value_start
    if clean[opening] != "{":
        return None
    return opening, _DECODER.raw_decode(clean, opening)[1] - 1


def _indent_of(text: str, i: int) -> str:
    line_start = text.rfind("\n", 0, i) + 1
    line = text[line_start:]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indented(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def set_member(text: str, at: Sequence[str], name: str, value: Any) -> str:
    """`text` with `name` set to `value` in the object at key path `at` (missing objects on the way are made):
    a member already there has its value replaced, a new one goes last."""
    clean = strip_jsonc(text)
    span = _object_at(clean, at)
    if span is None:
        if not at:
            raise ValueError("the text holds no JSON object")
        return set_member(text, at[:-1], at[-1], {name: value})
    opening, closing = span
    member = next((m for m in _members(clean, opening) if m.name == name), None)
    if member is not None:
        indent = _indent_of(text, member.key_start)
        return text[: member.value_start] + _indented(value, indent) + text[member.value_end :]
    return _insert(text, clean, opening, closing, name, value)


def _insert(text: str, clean: str, opening: int, closing: int, name: str, value: Any) -> str:
    base = _indent_of(text, closing)
    members = _members(clean, opening)
    inner = _indent_of(text, members[0].key_start) if members else base + "  "
    if members and inner == _indent_of(text, opening) and "\n" not in text[opening:closing]:
        inner = base + "  "  # a one-line object: the new member on a line of its own
    entry = f"{inner}{json.dumps(name)}: {_indented(value, inner)}"
    if not members:
        return text[: opening + 1] + "\n" + entry + "\n" + base + text[closing:]
    last = members[-1].value_end
    eol = text.find("\n", last)
    if 0 <= eol < closing and not clean[last:eol].strip(" \t\r,"):
        # The last member's line ends with its comma or a comment (`"a": {...}, // the first`): keep that line
        # whole and add the member below it.
        tail = text[last:eol]
        comma = "" if "," in tail.split("//")[0] else ","  # (a trailing comma is blank in `clean`)
        return text[:last] + comma + tail + "\n" + entry + text[eol:]
    return text[:last] + ",\n" + entry + text[last:]


def remove_member(text: str, at: Sequence[str], name: str) -> str:
    """`text` without the member `name` of the object at key path `at` (as it was when there is none), its line
    and a comment ending that line going with it."""
    clean = strip_jsonc(text)
    span = _object_at(clean, at)
    if span is None:
        return text
    members = _members(clean, span[0])
    index = next((k for k, m in enumerate(members) if m.name == name), None)
    if index is None:
        return text
    member = members[index]
    start, end = member.key_start, member.value_end
    cuts: list[tuple[int, int]] = []
    after = _skip_inline(clean, end)
    if after < len(clean) and clean[after] == ",":
        end = after + 1
    elif index > 0:  # the last member: the comma before it goes instead
        comma = clean.rfind(",", members[index - 1].value_end, start)
        if comma >= 0:
            cuts.append((comma, comma + 1))
    line_start = text.rfind("\n", 0, start) + 1
    eol = text.find("\n", end)
    if not text[line_start:start].strip() and eol >= 0 and not clean[end:eol].strip():
        cuts.append((line_start, eol + 1))
    else:
        cuts.append((start, end))
    for cut_start, cut_end in sorted(cuts, reverse=True):
        text = text[:cut_start] + text[cut_end:]
    return text


def _skip_inline(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i
