"""The outline of a stored text: a map of what it holds and where, made when it is stored.

What the text is (the chunker's :func:`~offprompt.memory.chunking.detect`) decides what the map shows:

- **code** (code.py): classes, functions and methods, nested, with the first sentence of a docstring;
- **Markdown, reST, HTML** (headings.py): the heading tree (HTML headings in Markdown too);
- **JSON** (json_schema.py): the inferred schema (paths, types, sizes, an example each) and the keys or
  records at the top with the line where each starts;
- **logs** (logs.py): time span, line count, lines per level, the most frequent message templates;
- **other text** (paragraphs.py): numbered sections with their paragraphs, else paragraphs (or groups of them)
  with their first words.

A table or a stream of records (:mod:`offprompt.memory.records`) gets a first entry saying so: how many records,
their fields, and a jq line for `memory_select` (counted over the text's head when the outline is made at store
time; read back as the records are once they are made).

Every entry carries its 1-based first and last line and the token offset where it starts, exact even where
a line is longer than a window (minified JSON): ``memory_load`` from ``line`` or ``offset`` begins with it.
``view.py`` renders a bounded outline for a reference and pages a whole one.
"""

from __future__ import annotations

import json

import numpy as np

from offprompt.memory.chunking.detect import detect
from offprompt.memory.outline import code, commits, headings, json_schema, logs, paragraphs, snapshot
from offprompt.memory.outline.addressing import LineIndex, chars_to_bytes
from offprompt.memory.outline.entries import MAX_ENTRIES, Entry, Found
from offprompt.memory.outline.view import shallow_first
from offprompt.memory.records import preview
from offprompt.tokens import TokenIndex

__all__ = ["RECORDS", "Entry", "LineIndex", "build", "dumps", "loads"]

#: The kind of the entry that says a text has records.
RECORDS = "records"


def build(data: bytes, kind: str, hint: str, tokens: TokenIndex, lines: LineIndex | None = None) -> list[Entry]:
    """The outline of UTF-8 ``data`` stored as an artifact of ``kind`` (``hint``: a file name or MIME type)."""
    text = data.decode("utf-8")
    if not text.strip():
        return []
    found = _find(text, detect(text, kind, hint), hint)
    if len(found) > MAX_ENTRIES - 1:
        found = shallow_first(found, MAX_ENTRIES - 1)
    summary = preview(text, kind)
    if summary is not None:
        found.insert(0, Found(summary.to_text(), RECORDS, 0, 0, len(text.rstrip("\n")) or len(text)))
    return _place(found, text, data, tokens, lines or LineIndex.of(data))


def _find(text: str, shape: str, hint: str) -> list[Found]:
    found: list[Found] = []
    if shape != "json" and commits.looks_like(text):
        found = commits.outline(text)
    elif shape != "json" and snapshot.looks_like(text):
        found = snapshot.outline(text)
    elif shape == "json":
        found = json_schema.outline(text)
    elif shape == "log":
        found = logs.outline(text)
    elif shape == "code":
        found = code.outline(text)
    elif headings.looks_html(text, hint):
        found = (headings.markdown_outline(text) if shape == "prose" else []) or headings.html_outline(text)
    if not found and shape == "prose":
        found = headings.text_outline(text)
    return found or paragraphs.outline(text)


def _place(found: list[Found], text: str, data: bytes, tokens: TokenIndex, lines: LineIndex) -> list[Entry]:
    """Character spans as lines and token offsets."""
    if not found:
        return []
    chars = np.asarray([x for f in found for x in (f.start, max(f.end - 1, f.start))], dtype=np.int64)
    at = chars_to_bytes(text, data, chars)
    line_of = lines.lines_at(at)
    starts = np.maximum(np.searchsorted(tokens.offsets, at[0::2], side="right") - 1, 0)
    return [
        Entry(f.title, f.kind, f.depth, line_of[2 * k], line_of[2 * k + 1], int(starts[k])) for k, f in enumerate(found)
    ]


def dumps(entries: list[Entry]) -> bytes:
    return json.dumps([e.to_dict() for e in entries], ensure_ascii=False, separators=(",", ":")).encode()


def loads(data: bytes) -> list[Entry]:
    return [Entry.from_dict(d) for d in json.loads(data)]
