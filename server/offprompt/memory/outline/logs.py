"""Logs: time span, line count, lines per level, and the most frequent message templates.

A template is a line with its timestamp dropped and its numbers masked; lines of the same shape (word
count, first two words) share one, and the words in which they differ become ``<*>``, as the Drain log
parser does, in one pass. Masking and counting run over the whole text at once (``str.translate``,
``Counter``); only distinct lines are merged in Python, so 1 MB of log costs tens of milliseconds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from offprompt.memory.outline.entries import Found, title
from offprompt.memory.records.logs import ZONE

TOP_TEMPLATES = 20

_TIME = re.compile(
    r"^\s*\[?(?P<t>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?" + ZONE + r"|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d"
    r"|[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d|\d{1,2}:\d\d:\d\d(?:\.\d+)?|\d{10}(?:\.\d+)?)\]?"
)
_DIGITS = str.maketrans("123456789", "000000000")
_BYTE_DIGITS = bytes.maketrans(b"123456789", b"000000000")  # bytes.translate is fast on any text
_ZEROS = re.compile(r"0+")
#: Level words counted, in capitals (``WARN`` counts ``WARNING`` too).
_LEVELS = ("TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "CRITICAL", "FATAL")


@dataclass(slots=True)
class _Template:
    words: list[str]
    count: int
    first: int  # line index
    last: int


def outline(text: str) -> list[Found]:
    raw = text.split("\n")
    rows = text.encode("utf-8").translate(_BYTE_DIGITS).decode("utf-8").split("\n")
    counts = Counter(rows)
    for row in [r for r in counts if not r.strip()]:
        del counts[row]
    if not counts:
        return []
    lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw)) + 1
    starts = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(lengths)))
    first = dict(zip(reversed(rows), range(len(rows) - 1, -1, -1), strict=True))
    last = dict(zip(rows, range(len(rows)), strict=True))
    size = len(text)
    ends = _ends(raw)
    span = f", {ends[0][1]} to {ends[-1][1]}" if len(ends) == 2 and ends[0][1] != ends[-1][1] else ""
    begin = min(first.values())
    out = [Found(f"{sum(counts.values()):,} lines{span}", "summary", 0, int(starts[begin]), size)]
    out.extend(_levels(text))
    stamp = ends[0][0] if ends else ""  # the first stamp's shape, digits as 0: most lines start with it
    templates: dict[tuple[int, str, str], _Template] = {}
    for row in sorted(counts, key=first.__getitem__):
        body = row[len(stamp) :] if stamp and row.startswith(stamp) else row
        _add(templates, body.split() or [row.strip()], counts[row], first[row], last[row])
    top = sorted(templates.values(), key=lambda t: (-t.count, t.first))[:TOP_TEMPLATES]
    for t in sorted(top, key=lambda t: t.first):
        a, b = int(starts[t.first]), int(starts[t.last + 1]) - 1
        words = " ".join(_ZEROS.sub("<n>", w) if w != "<*>" else w for w in t.words)
        out.append(Found(title(f"{t.count:,}x {words}"), "template", 1, a, max(b, a + 1)))
    return out


def _ends(raw: list[str]) -> list[tuple[str, str]]:
    """(shape with digits as 0, time) of the first and the last timestamp, looked for near each end."""
    head = next((m for m in map(_TIME.match, raw[:50]) if m), None)
    tail = next((m for m in map(_TIME.match, reversed(raw[-50:])) if m), None)
    return [(m.group().translate(_DIGITS), m.group("t")) for m in (head, tail) if m is not None]


def _levels(text: str) -> list[Found]:
    out: list[tuple[int, Found]] = []
    for name in _LEVELS:
        count = text.count(name)
        if not count:
            continue
        a, b = text.find(name), text.rfind(name) + len(name)
        out.append((count, Found(f"{name}: {count:,}", "level", 1, text.rfind("\n", 0, a) + 1, b)))
    return [f for _, f in sorted(out, key=lambda x: -x[0])]


def _add(templates: dict[tuple[int, str, str], _Template], words: list[str], count: int, first: int, last: int) -> None:
    key = (len(words), words[0], words[1] if len(words) > 1 else "")
    found = templates.get(key)
    if found is None:
        templates[key] = _Template(words, count, first, last)
        return
    found.count += count
    found.first, found.last = min(found.first, first), max(found.last, last)
    for k, (a, b) in enumerate(zip(found.words, words, strict=True)):
        if a != b and a != "<*>":
            found.words[k] = "<*>"
