"""Fixed-width column output (`ps`, `docker ps`, `kubectl get`, `df`, `pip list`, a profile's `ncalls tottime …`):
columns found where the header and the rows are blank at the same places, named by the header's words above them.
The header may follow a few lines that say what the table is (cProfile's `2016 function calls in 0.3 seconds`).

A word of a row belongs to the column it overlaps (a right-aligned number overlaps its header's end), so a value
longer than its column is read whole; the last column takes the rest of the line (a command with its arguments).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from offprompt.memory.records.base import Record
from offprompt.memory.records.values import typed, unique_names

#: Rows of the head that place the columns.
_SNIFF_ROWS: Final = 200
_WORD: Final = re.compile(r"\S+")
#: The share of rows that may cross a gap between two columns.
_OVERFLOW: Final = 0.2
_DASHES: Final = re.compile(r"^[\s=-]+$")
#: A header word: a name in capitals or capitalised (`PID`, `%CPU`, `NAME`, `Filesystem`), not a number.
_HEADER_WORD: Final = re.compile(r"[A-Z%#][\w%#()/.:+-]*")
#: A column's name holds a letter (`%CPU`, `# of pods`), never punctuation alone.
_NAME: Final = re.compile(r"[^\W\d_]")
#: Lines before the header that may say what the table is (`top -b`'s five): each is tried as the header.
_PREAMBLE_ROWS: Final = 6
#: A header of lowercase words (`ncalls tottime percall`) reads like a line of prose, and a header past other lines
#: may be a Markdown heading over a list: either heads a table only where this share of its columns hold a number
#: in most rows (a profile's, `top`'s, `vmstat`'s).
_NUMERIC_COLUMNS: Final = 0.5


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    start: int
    end: int  # exclusive


class ColumnsReader:
    """Rows of fixed-width columns under a header line."""

    name = "table of columns"
    #: Its rows are read by the header line above them, which memory_query shows above them too.
    headed = True
    what = "rows"

    def fits(self, lines: Sequence[str]) -> bool:
        found = _layout(lines)
        return found is not None and len(found[1]) >= 2

    def read(self, text: str) -> Iterator[Record]:
        lines = text.split("\n")
        found = _layout(lines[: _SNIFF_ROWS + _PREAMBLE_ROWS + 2])
        if found is None:
            return
        first, columns = found
        names = unique_names([c.name for c in columns])
        for n in range(first, len(lines)):
            row = lines[n].rstrip()
            if not row.strip() or _DASHES.match(row):
                continue
            record: Record = {"line": n + 1}
            for name, value in zip(names, _cells(row, columns), strict=True):
                record[name] = typed(value)
            yield record


def _layout(lines: Sequence[str]) -> tuple[int, list[_Column]] | None:
    """The first data row's index and the columns, if the text starts with a header over aligned rows (past a
    preamble of a few lines at most)."""
    numbered = [(n, line.rstrip()) for n, line in enumerate(lines) if line.strip()]
    best: tuple[int, list[_Column]] | None = None
    for k in range(min(_PREAMBLE_ROWS + 1, max(len(numbered) - 2, 0))):
        found = _under(numbered[k][1], [row for _, row in numbered[k + 1 :]], preamble=k > 0)
        # A preamble's line can pass for a header over the real one and its rows, naming fewer, wider columns
        # (`Ordered by: cumulative time`): the header that names the most columns wins, the first of equals.
        if found is not None and (best is None or len(found) > len(best[1])):
            best = numbered[k][0] + 1, found
    return best


def _under(header: str, rows: Sequence[str], preamble: bool) -> list[_Column] | None:
    """The columns of the rows under this header line, if it heads them."""
    words = header.split()
    lower = [w for w in words if not _HEADER_WORD.fullmatch(w)]
    if len(words) < 2 or any(typed(w) is not None and not isinstance(typed(w), str) for w in words):
        return None
    body = [r for r in rows[:_SNIFF_ROWS] if not _DASHES.match(r)]
    if len(body) < 2:
        return None
    width = max(len(r) for r in [header, *body])
    used = [0] * width
    for row in body:
        for m in _WORD.finditer(row):
            for at in range(m.start(), m.end()):
                used[at] += 1
    # A gap: blank in the header and in nearly every row (a value that overflows its column, as `ps` prints a
    # wide VSZ, crosses it in a few).
    tolerated = int(_OVERFLOW * len(body))
    blank = "".join(
        " " if used[at] <= tolerated and (at >= len(header) or header[at] == " ") else "x" for at in range(width)
    )
    spans = [(m.start(), m.end()) for m in re.finditer(r"x+", blank)]
    columns = _named(header, spans, [any(used[s:e]) for s, e in spans])
    if columns is None or len(columns) < 2 or not all(_NAME.search(c.name) for c in columns):
        return None  # a column named by no word: a comment marker (`# Author: …` over a module's code)
    if (preamble or len(lower) > 1) and _numeric_share(body, columns) < _NUMERIC_COLUMNS:
        return None
    return columns


def _numeric_share(body: Sequence[str], columns: Sequence[_Column]) -> float:
    """The share of the columns whose cells are numbers in most of these rows."""
    cells = [_cells(row, columns) for row in body]
    numeric = 0
    for k in range(len(columns)):
        numbers = sum(1 for row in cells if isinstance(typed(row[k]), int | float))
        numeric += numbers >= (1 - _OVERFLOW) * len(cells)
    return numeric / len(columns)


def _named(header: str, spans: list[tuple[int, int]], filled: list[bool]) -> list[_Column] | None:
    """Each blank-bounded span named by the header's text above it; a span with no header text joins the column
    before it (a value with spaces, `Up 2 hours`), a header word with no values under it joins the name before it
    (`Mounted on`)."""
    columns: list[_Column] = []
    for (start, end), has_values in zip(spans, filled, strict=True):
        name = header[start:end].strip()
        if columns and (not name or not has_values):
            last = columns[-1]
            columns[-1] = _Column(f"{last.name} {name}".strip(), last.start, end)
        elif not name:
            return None  # values before the first header word: not a table under a header
        else:
            columns.append(_Column(name, start, end))
    return columns


def _cells(row: str, columns: Sequence[_Column]) -> list[str]:
    """The row's words by column (see the module's docstring); the last column keeps the rest of the line."""
    spans: list[list[int]] = [[] for _ in columns]
    last = len(columns) - 1
    for m in _WORD.finditer(row):
        k = _column_of(m.start(), m.end(), columns)
        if k == last:
            spans[k] = [spans[k][0] if spans[k] else m.start(), len(row)]
            break
        spans[k] = [spans[k][0] if spans[k] else m.start(), m.end()]
    return [row[span[0] : span[1]].strip() if span else "" for span in spans]


def _column_of(start: int, end: int, columns: Sequence[_Column]) -> int:
    """The column a word at [start, end) belongs to: the one it starts in, else the one it reaches into, else the
    nearer of the two it lies between."""
    k = 0
    while k + 1 < len(columns) and columns[k + 1].start <= start:
        k += 1
    if start < columns[k].end or k + 1 == len(columns):
        return k
    following = columns[k + 1]
    if end > following.start or following.start - end < start - columns[k].end:
        return k + 1
    return k
