"""JSON with comments and trailing commas, and the line each key of a config file is on."""

from __future__ import annotations

import contextlib
import json
from bisect import bisect_right

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
