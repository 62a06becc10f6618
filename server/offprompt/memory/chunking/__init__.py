"""Cut a stored text into search chunks along its own structure.

What the text is decides where it is cut (:func:`detect`, in detect.py):

- **JSON**: along records (object members, array elements). A record too big
  for one chunk is cut along its own members, and each of those chunks carries
  the record's path (``shapes > SendMessageRequest > members``) as context. An
  array's record is named there by what tells it from its siblings, read from
  the records (``installed > [12] tzdata: Provider of IANA time zone data``).
- **code**: along definitions. A block is a line at the enclosing indentation
  with everything indented under it, plus the comments and decorators right
  above it, so a function with its docstring stays whole where it fits. A
  definition too big is cut along its body's blocks, under its signature.
- **prose** (Markdown, reStructuredText, plain text): into sections at the
  headings, then paragraphs (a paragraph keeps the indented block under it, as
  a reST directive keeps its body), then lines. Chunks carry the heading path.
- **logs**: along blank-line blocks, then lines.
- **records of several lines** (a `git log`'s commits, stanzas of `Key: value` lines), whatever the text reads as:
  along the lines that start them (:class:`RecordStarts`, found by the records' reader): a record that fits in a
  chunk is never cut, so a commit's header, message and stat are found together.

Small neighbouring units share a chunk up to ``target`` wordpieces. No chunk
is longer than the embedding model reads (:data:`MAX_TEXT_WORDPIECES`,
context included); a unit with no structure left inside that is still too
long (a very long line, a JSON string) is cut into overlapping windows.

A chunk is a byte span of the stored text plus its ``context``; the context
is prepended only where the chunk is embedded and indexed, so a hit's offset
points exactly into what ``memory_load`` reads. Together the chunks cover
every non-blank byte of the text.

The modules: ``detect`` (what the text is), ``lines`` (code, prose and logs
as a tree of units), ``records`` (JSON as one), ``record_names`` (what names
a JSON record among its siblings), ``packing`` (units into
chunks within the limits), ``units`` (what they share), ``model_text`` (a
chunk as the embedding model reads it).
"""

from __future__ import annotations

from collections.abc import Iterable

from offprompt.memory.chunking.detect import detect
from offprompt.memory.chunking.lines import Lines
from offprompt.memory.chunking.model_text import for_embedding
from offprompt.memory.chunking.packing import Packer
from offprompt.memory.chunking.records import JsonRecords
from offprompt.memory.chunking.units import (
    LINE_OVERLAP,
    TARGET_WORDPIECES,
    Chunk,
    Node,
    RecordStarts,
    Shape,
    line_starts,
)

__all__ = ["TARGET_WORDPIECES", "Chunk", "RecordStarts", "Shape", "chunk", "detect", "for_embedding", "line_starts"]


def chunk(
    data: bytes,
    kind: str = "text",
    hint: str = "",
    *,
    target: int | None = None,
    limit: int | None = None,
    records: RecordStarts | None = None,
) -> list[Chunk]:
    """Search chunks of a stored UTF-8 text of the given artifact kind, in text order.

    ``target`` (default :data:`TARGET_WORDPIECES` for the shape) is how far small units are packed together;
    ``limit`` (default: what the embedding model reads) is the most any chunk holds, context included;
    ``records``, where the text's records of several lines start, if it has such.
    """
    from offprompt.embedding import MAX_TEXT_WORDPIECES

    text = data.decode("utf-8")
    if not text.strip():
        return []
    shape = detect(text, kind, hint)
    packer = Packer(text, target or TARGET_WORDPIECES[shape], limit or MAX_TEXT_WORDPIECES, LINE_OVERLAP)
    roots: list[Node] = []
    if shape == "json":
        roots = JsonRecords(text).members(0, len(text))
    if not roots:
        lines = Lines(text, shape)
        if records is not None and records.offsets:
            roots = lines.records(records)
        elif shape == "prose":
            roots = lines.sections(0, lines.count, lines.headings())
        elif shape == "log":
            roots = lines.line_nodes(0, lines.count)  # a log is one run of lines, blank ones included
        else:
            roots = lines.blocks(0, lines.count)
    packer.pack(roots)
    return _to_bytes(text, data, packer.chunks())


def _to_bytes(text: str, data: bytes, spans: list[tuple[int, int, str, str]]) -> list[Chunk]:
    if len(text) == len(data):
        return [Chunk(a, b, context, titles) for a, b, context, titles in spans]
    offsets = sorted({x for a, b, _, _ in spans for x in (a, b)})
    to_byte = dict(zip(offsets, _chars_to_bytes(text, offsets), strict=True))
    return [Chunk(to_byte[a], to_byte[b], context, titles) for a, b, context, titles in spans]


def _chars_to_bytes(text: str, char_offsets: Iterable[int]) -> list[int]:
    """Byte offsets of ascending character offsets, encoding each stretch once."""
    out: list[int] = []
    last_char = last_byte = 0
    for char in char_offsets:
        last_byte += len(text[last_char:char].encode("utf-8"))
        last_char = char
        out.append(last_byte)
    return out
