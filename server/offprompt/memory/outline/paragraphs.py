"""Other text: its paragraphs (blank-line blocks) with their first words; many are grouped into sections.

A licence, an RFC or a contract numbers its sections (``1. Definitions.``, ``2. Grant of Copyright License.``):
paragraphs that open with 0 or 1 and go on one by one are headings, and the paragraphs between them nest
under them; a numbered list inside a section (``1.`` while ``5.`` is due) is left a paragraph."""

from __future__ import annotations

import itertools
import re

from offprompt.memory.outline.entries import Found, first_words

#: More paragraphs than this are grouped into about this many sections.
MAX_PARAGRAPHS = 120
#: A paragraph longer than this (a text on one line) is cut into sections at spaces.
LONG_PARAGRAPH_CHARS = 16_000

#: Fewer numbered paragraphs in a row than this are a list, not a text's sections.
MIN_NUMBERED = 5

_BLANK_LINES = re.compile(r"\n[ \t\r]*\n\s*")
_NUMBERED = re.compile(r"(\d{1,3})\.[ \t]+\S")
#: A rule of at most 1,000 marks: one match over a line of 16 MiB of `=` held the GIL for seconds.
_RULE = re.compile(r"[ \t]*([=\-*_~#+])\1{2,999}[ \t]*(?:\n|$)")


def outline(text: str) -> list[Found]:
    spans = _paragraphs(text)
    if not spans:
        return []
    if len(spans) == 1 and spans[0][1] - spans[0][0] > LONG_PARAGRAPH_CHARS:
        spans = _cut(text, *spans[0])
    numbered = _numbered(text, spans)
    if len(numbered) >= MIN_NUMBERED:
        return _sections(text, spans, numbered)
    if len(spans) <= MAX_PARAGRAPHS:
        return [_paragraph(text, a, b, 0) for a, b in spans]
    per = -(-len(spans) // MAX_PARAGRAPHS)
    groups = [spans[k : k + per] for k in range(0, len(spans), per)]
    return [Found(first_words(text[g[0][0] : g[0][0] + 400]), "section", 0, g[0][0], g[-1][1]) for g in groups]


def _numbered(text: str, spans: list[tuple[int, int]]) -> list[int]:
    """The paragraphs (indexes into ``spans``) that open with the next section number: 0 or 1, then one more
    each time."""
    chain: list[int] = []
    due = {0, 1}
    for k, (a, b) in enumerate(spans):
        found = _NUMBERED.match(text, a)
        if found is None or int(found.group(1)) not in due or _lists(text, a, b, int(found.group(1))):
            continue
        chain.append(k)
        due = {int(found.group(1)) + 1}
    return chain


def _lists(text: str, start: int, end: int, number: int) -> bool:
    """Whether the paragraph's next line goes on with the next number: a table of contents, not a heading."""
    line_end = text.find("\n", start, end)
    if line_end == -1:
        return False
    following = _NUMBERED.match(text[line_end + 1 : end].lstrip())
    return following is not None and int(following.group(1)) == number + 1


def _sections(text: str, spans: list[tuple[int, int]], numbered: list[int]) -> list[Found]:
    """The numbered paragraphs as headings running to the next one, the others as paragraphs: at the top
    before the first, under their section after it (unless there are too many to list)."""
    heads = set(numbered)
    out: list[Found] = []
    nested = len(spans) <= MAX_PARAGRAPHS
    for k, (a, b) in enumerate(spans):
        if k in heads:
            following = [spans[j][0] for j in numbered if j > k]
            end = text.rfind("\n", 0, following[0]) + 1 if following else len(text)  # the line before the next
            line_end = text.find("\n", a, b)
            first_line = text[a : line_end if line_end != -1 else b]
            out.append(Found(first_words(first_line, words=12), "heading", 0, a, max(end, b)))
        elif k < numbered[0] or nested:
            out.append(_paragraph(text, a, b, 0 if k < numbered[0] else 1))
    return out


def _paragraph(text: str, start: int, end: int, depth: int) -> Found:
    return Found(first_words(text[start : min(end, start + 400)]), "paragraph", depth, start, end)


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Blank-line blocks, each from its first line that is not a rule: Vim's help puts a line of `=` right
    above `1. Overview`, and a block of rules alone is no paragraph."""
    spans: list[tuple[int, int]] = []
    pos = len(text) - len(text.lstrip())
    for gap in [*_BLANK_LINES.finditer(text), None]:
        end = gap.start() + 1 if gap else len(text)
        start = _past_rules(text, pos, end)
        if end > start and text[start:end].strip():
            spans.append((start, end))
        if gap is None:
            break
        pos = gap.end()
    return spans


def _past_rules(text: str, start: int, end: int) -> int:
    while (rule := _RULE.match(text, start, end)) is not None:
        start = rule.end()
    return start


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    count = min(MAX_PARAGRAPHS, -(-(end - start) // LONG_PARAGRAPH_CHARS))
    size = (end - start) // count
    cuts = [start]
    for k in range(1, count):
        at = text.find(" ", start + k * size, start + k * size + 200)
        cuts.append(at + 1 if at != -1 else start + k * size)
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
