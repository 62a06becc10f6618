"""The words' windows: a text cut every WINDOW_CHARS characters, ranked by BM25 beside its chunks.

A chunk follows the text's structure, so BM25 over chunks weighs a question's words by how the chunker cut
(a long chunk dilutes them; the line naming what the question asks about may sit in the chunk before the
line that answers). A plain BM25 over fixed windows of characters, what a reader with grep and a pager does,
sometimes puts first what no chunk ranks high. The hybrid ranking keeps that window among its five passages
(`text_query.py`), so what words alone find first is never lost. The window is indexed as cut (its spans are
fixed, so re-indexing finds the same ones) and shown widened to whole lines, or at least whole words.
"""

from __future__ import annotations

from typing import BinaryIO, Final

__all__ = ["WIDEN_BYTES", "WINDOW_CHARS", "spans", "widened", "widened_in"]

#: The window's length: about 200 tokens, what an outside judge's plain BM25 reads at a time.
WINDOW_CHARS: Final = 800
#: How far a shown window reaches back and forward to start and end on a line's edge (else on a word's).
WIDEN_BYTES: Final = 200
_SPACE: Final = b" \t\r\n"


def spans(text: str) -> list[tuple[int, int]]:
    """The byte spans of `text`'s windows of WINDOW_CHARS characters (the last one shorter), in order."""
    out: list[tuple[int, int]] = []
    start = 0
    for first in range(0, len(text), WINDOW_CHARS):
        end = start + len(text[first : first + WINDOW_CHARS].encode("utf-8"))
        out.append((start, end))
        start = end
    return out


def widened(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The span `start`..`end` of `data` widened to the lines it cuts, when their edges are within WIDEN_BYTES,
    else to the words it cuts: a passage that starts and ends where a reader would."""
    return _back(data, start), _forward(data, end)


def widened_in(f: BinaryIO, size: int, start: int, end: int) -> tuple[int, int]:
    """`widened` over a file of `size` bytes, reading only the WIDEN_BYTES each side of the span (and one more,
    so a slice that starts past the file's start is never taken for it)."""
    base = max(0, start - WIDEN_BYTES - 1)
    top = min(size, end + WIDEN_BYTES + 1)
    f.seek(base)
    data = f.read(top - base)
    return base + _back(data, start - base), base + _forward(data, end - base)


def _back(data: bytes, start: int) -> int:
    if start <= 0 or data[start - 1 : start] == b"\n":
        return max(start, 0)
    floor = max(0, start - WIDEN_BYTES)
    line = data.rfind(b"\n", floor, start)
    if line >= 0 or floor == 0:
        return line + 1
    k = start
    while k > floor and data[k - 1] not in _SPACE:
        k -= 1
    return k if k > floor else start


def _forward(data: bytes, end: int) -> int:
    if end >= len(data) or data[end - 1 : end] == b"\n":
        return min(end, len(data))
    ceiling = min(len(data), end + WIDEN_BYTES)
    line = data.find(b"\n", end, ceiling)
    if line >= 0:
        return line + 1
    if ceiling == len(data):
        return ceiling
    k = end
    while k < ceiling and data[k] not in _SPACE:
        k += 1
    return k if k < ceiling else end
