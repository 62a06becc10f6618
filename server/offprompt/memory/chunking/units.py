"""What the cutters share: the limits, the unit tree's node, and the chunk they produce."""

from __future__ import annotations

from collections.abc import Callable
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


def shorten(line: str, limit: int = 80) -> str:
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
