"""Other text: its paragraphs (blank-line blocks) with their first words; many are grouped into sections."""

from __future__ import annotations

import itertools
import re

from offprompt.memory.outline.entries import Found, first_words

#: More paragraphs than this are grouped into about this many sections.
MAX_PARAGRAPHS = 120
#: A paragraph longer than this (a text on one line) is cut into sections at spaces.
LONG_PARAGRAPH_CHARS = 16_000

_BLANK_LINES = re.compile(r"\n[ \t\r]*\n\s*")


def outline(text: str) -> list[Found]:
    spans = _paragraphs(text)
    if not spans:
        return []
    if len(spans) == 1 and spans[0][1] - spans[0][0] > LONG_PARAGRAPH_CHARS:
        spans = _cut(text, *spans[0])
    if len(spans) <= MAX_PARAGRAPHS:
        return [Found(first_words(text[a : min(b, a + 400)]), "paragraph", 0, a, b) for a, b in spans]
    per = -(-len(spans) // MAX_PARAGRAPHS)
    groups = [spans[k : k + per] for k in range(0, len(spans), per)]
    return [Found(first_words(text[g[0][0] : g[0][0] + 400]), "section", 0, g[0][0], g[-1][1]) for g in groups]


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = len(text) - len(text.lstrip())
    for gap in _BLANK_LINES.finditer(text):
        if gap.start() > pos:
            spans.append((pos, gap.start() + 1))
        pos = gap.end()
    if text[pos:].strip():
        spans.append((pos, len(text)))
    return spans


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    count = min(MAX_PARAGRAPHS, -(-(end - start) // LONG_PARAGRAPH_CHARS))
    size = (end - start) // count
    cuts = [start]
    for k in range(1, count):
        at = text.find(" ", start + k * size, start + k * size + 200)
        cuts.append(at + 1 if at != -1 else start + k * size)
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
