"""What the cutters share: the limits, the unit tree's node, and the chunk they produce."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

#: Neighbouring small units are packed together up to this many wordpieces, by what the text is. A JSON record
#: is an answer on its own: its chunks stay small, so a question's words are not drowned out. A log's windows go
#: up to what the model reads (254): a question about a log names a step (``test_json``) that sits a few lines
#: above its outcome (``Ran 50 tests``), and the wider window holds both (eval, dev split: log recall@1 0.45 ->
#: 0.59 for lexical; a fifth fewer chunks, about as many wordpieces to embed).
TARGET_WORDPIECES: Final[dict[str, int]] = {"json": 200, "code": 200, "prose": 200, "log": 254}
#: Records (JSON objects or definitions side by side) are packed together only up to this: each is an answer on
#: its own.
RECORD_TARGET_WORDPIECES: Final = 64
#: Windows over a run of plain lines (a log) share this share of themselves with the next one.
LINE_OVERLAP: Final = 0.5
#: A chunk's context (heading path, enclosing definitions, JSON path) is kept under this.
MAX_CONTEXT_WORDPIECES: Final = 40
#: Consecutive windows of an over-long unit share about this share of a window.
WINDOW_OVERLAP: Final = 0.15

MAX_LABEL_CHARS = 140


def count_wordpieces(texts: list[str]) -> list[int]:
    """The embedding model's wordpieces per text (imported on first use: it brings Chroma along)."""
    from offprompt.embedding import count_wordpieces as count

    return count(texts)


def _whole_words() -> frozenset[str]:
    from offprompt.embedding import whole_words

    return whole_words()


#: The tokenizer reads a piece longer than this (its `max_input_chars_per_word`) as one [UNK]: measured by that,
#: a line of 16 MiB without white space would be one chunk of 16 MiB. Such a piece is measured by its length
#: instead, at about as many characters per wordpiece as prose has, so its chunks are as long as any others.
LONG_PIECE_CHARS: Final = 100
CHARS_PER_LONG_PIECE_WORDPIECE: Final = 4


#: What the model's tokenizer (BERT's) takes for whitespace, and the ASCII punctuation it always cuts a word at,
#: each mark a wordpiece of its own. It never joins pieces across either, so a text's wordpieces are the sum of its
#: pieces': runs of anything else, and single marks. Its special tokens, found in the raw text first, are one each.
#: A run of white space within a line longer than `LONG_PIECE_CHARS` is a piece too, measured by its length (the
#: model reads none of it), so a chunk holds no megabyte of blanks around two words; within a line, so a span's
#: count stays the sum of its lines'. It starts only where such a run does: the engine never retries it inside one.
_INLINE_SPACE = r"\t\r \xa0\u1680\u2000-\u200a\u202f\u205f\u3000"
_SPACE = r"\n" + _INLINE_SPACE
_MARK = r"!-/:-@\[-`{-~"
_PIECES: Final = re.compile(
    f"\\[(?:PAD|UNK|CLS|SEP|MASK)\\]|[{_MARK}]|[^{_SPACE}{_MARK}]+"
    f"|(?<![{_INLINE_SPACE}])[{_INLINE_SPACE}]{{{LONG_PIECE_CHARS + 1},}}"
)
#: Longer pieces (minified base64, a hash) rarely come again: counted each time rather than kept.
_KEPT_PIECE_CHARS: Final = 200


def long_piece_wordpieces(piece: str) -> int:
    """What a piece longer than :data:`LONG_PIECE_CHARS` counts for: its length, not the tokenizer's one [UNK]."""
    return -(-len(piece) // CHARS_PER_LONG_PIECE_WORDPIECE)


class WordpieceCounter:
    """Wordpieces of many overlapping pieces of one text, each distinct piece of a word tokenized once.

    The packer counts every line, then again the spans and windows it tries: the same words over and over. Here
    each piece is counted once (a plain word found whole in the vocabulary is one wordpiece without asking the
    tokenizer) and a span is the sum of its pieces: exactly what the tokenizer counts for the whole span (a piece
    longer than the tokenizer reads whole aside: see `long_piece_wordpieces`). Chunking
    1 MB of JSON took 2.0 s before, 0.35 s now; code 1.0 s, now 0.6 s.
    """

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def __call__(self, texts: list[str]) -> list[int]:
        known = self._known
        split = [_PIECES.findall(text) for text in texts]
        new = list({p for pieces in split for p in pieces if p not in known})
        if new:
            vocabulary = _whole_words()
            plain = [p for p in new if p.isascii() and p.isalpha() and p.lower() in vocabulary]
            known.update(dict.fromkeys(plain, 1))
            known.update((p, long_piece_wordpieces(p)) for p in new if len(p) > LONG_PIECE_CHARS)
            rest = [p for p in new if p not in known]
            known.update(zip(rest, count_wordpieces(rest), strict=True))
        counts = [sum(map(known.__getitem__, pieces)) for pieces in split]
        for piece in new:
            if len(piece) > _KEPT_PIECE_CHARS:
                del known[piece]
        return counts


MAX_SUMMARY_CHARS = 80
MAX_TITLES_CHARS = 400
MAX_DEPTH = 40

Shape = Literal["json", "code", "prose", "log"]


def line_starts(text: str) -> list[int]:
    """Character offsets where each line starts, then the text's end (once, if it ends in a newline)."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    if starts[-1] != len(text):
        starts.append(len(text))
    return starts


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes ``[start, end)`` of the stored text.

    ``context`` says where they sit (the headings, definitions or JSON path above them) and ``titles`` names what
    they hold (the headings, signatures or JSON keys of the units inside); both are for search only.
    """

    start: int
    end: int
    context: str = ""
    titles: str = ""


@dataclass(frozen=True, slots=True)
class RecordStarts:
    """Where a text's records of several lines start (character offsets, each at a line's start), and the labels of
    its first and last record: what sets them apart (the newest and the oldest by date, else first and last in the
    text), in the words a question asks them by ("the very first commit"), for the chunks that hold them."""

    offsets: Sequence[int]
    first: str = ""
    last: str = ""


@dataclass(slots=True)
class Node:
    """A unit of the text, characters ``[start, end)``; ``expand`` gives its parts when it is too big."""

    start: int
    end: int
    label: str = ""
    expand: Callable[[], list[Node]] | None = None
    lead: bool = False  # introduces the sibling after it (a signature, a heading): packed forward, not back
    line: bool = False  # a single line of a run with no structure left
    record: bool = False  # one of many records alike (JSON objects side by side): a chunk of its own
    named: bool = False  # its label is its chunks' context, not only a title: never packed with a neighbour


def shorten(line: str, limit: int = 80) -> str:
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
