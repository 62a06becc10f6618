"""JSON with comments and trailing commas, and the line each key of a config file is on."""

from __future__ import annotations

import contextlib
import json
from bisect import bisect_right
from collections.abc import Mapping
from typing import Any

from offprompt.config.variables import Loc


def strip_jsonc(text: str) -> str:
    """Blank out `//` and `/* */` comments and trailing commas (JSONC), leaving every other character in place."""
    out = list(text)
    i, n = 0, len(text)
    pending_comma = -1
    while i < n:
        char = text[i]
        if char == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            pending_comma = -1
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2) + 2
            if end == 1:  # an unclosed /*: leave it for the JSON parser to point at
                break
            end = n if end == -1 else end
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            i = end
        else:
            if char == ",":
                pending_comma = i
            elif char in "}]":
                if pending_comma >= 0:
                    out[pending_comma] = " "
                pending_comma = -1
            elif not char.isspace():
                pending_comma = -1
            i += 1
    return "".join(out)


_DECODER = json.JSONDecoder()


def key_lines(text: str) -> tuple[dict[Loc, int], list[tuple[Loc, int]]]:
    """The line each key (and each list item) is on, by path; and keys given twice, with their first line."""
    starts = [i for i, char in enumerate(text) if char == "\n"]
    lines: dict[Loc, int] = {}
    duplicates: list[tuple[Loc, int]] = []

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def value(i: int, loc: Loc) -> int:
        i = skip(i)
        if text[i] in "{[":
            closing, index, seen = ("}" if text[i] == "{" else "]"), 0, dict[str, int]()
            i = skip(i + 1)
            while text[i] != closing:
                if closing == "}":
                    key, i = _DECODER.raw_decode(text, i)
                    item: Loc = (*loc, str(key))
                    lines[item] = bisect_right(starts, i - 1) + 1
                    if key in seen:
                        duplicates.append((item, seen[key]))
                    seen[key] = lines[item]
                    i = skip(i) + 1  # the colon
                else:
                    item = (*loc, index)
                    lines[item] = bisect_right(starts, skip(i)) + 1
                    index += 1
                i = skip(value(i, item))
                if text[i] == ",":
                    i = skip(i + 1)
            return i + 1
        return int(_DECODER.raw_decode(text, i)[1])

    # The JSON parser already accepted the text; a miss here only costs line numbers.
    with contextlib.suppress(ValueError, IndexError, RecursionError):
        value(0, ())
    return lines, duplicates


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _member_value(clean: str, opening: int, key: str) -> tuple[int, int] | None:
    """Where the value of `key` in the object opening at `opening` starts and ends (in the comment-free text)."""
    i = _skip(clean, opening + 1)
    while i < len(clean) and clean[i] != "}":
        name, i = _DECODER.raw_decode(clean, i)
        i = _skip(clean, _skip(clean, i) + 1)  # past the colon
        start = i
        _, i = _DECODER.raw_decode(clean, i)
        if name == key:
            return start, i
        i = _skip(clean, i)
        if clean[i] == ",":
            i = _skip(clean, i + 1)
    return None


def _indented(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def insert_members(text: str, key: str, members: Mapping[str, Any]) -> str:
    """`text` (JSON or JSONC) with `members` added to the object under the top-level `key` (made when missing);
    everything else, its comments, order and layout, as it was."""
    if not members:
        return text
    clean = strip_jsonc(text)
    top = _skip(clean, 0)
    _, top_end = _DECODER.raw_decode(clean, top)
    found = _member_value(clean, top, key)
    if found is None:
        opening, closing, added = top, top_end - 1, {key: dict(members)}
    else:
        opening, closing = found[0], found[1] - 1
        added = dict(members)
    line_start = text.rfind("\n", 0, closing) + 1
    base = text[line_start : line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" \t"))]
    inner = base + "  "
    entries = ",\n".join(f"{inner}{json.dumps(name)}: {_indented(value, inner)}" for name, value in added.items())
    last = closing - 1
    while last > opening and clean[last] in " \t\r\n,":
        last -= 1
    if last == opening:  # an empty object: the members are all it holds
        return text[: opening + 1] + "\n" + entries + "\n" + base + text[closing:]
    eol = text.find("\n", last + 1)
    if 0 <= eol < closing and not clean[last + 1 : eol].strip(" \t\r,"):
        # The last member's line ends with its comma or a comment (`"a": {...}, // the first`): keep that line
        # whole and add the members below it.
        tail = text[last + 1 : eol]
        comma = "" if "," in tail.split("//")[0] else ","
        return text[: last + 1] + comma + tail + "\n" + entries + text[eol:]
    return text[: last + 1] + ",\n" + entries + text[last + 1 :]
