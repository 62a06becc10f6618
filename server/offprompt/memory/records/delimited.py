"""CSV and TSV with a header row, read by the standard library's `csv` (quoted fields, quotes doubled, line breaks
inside quotes)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record
from offprompt.memory.records.values import typed, unique_names

#: Delimiters tried, most common first. `|` is left to Markdown tables.
_DELIMITERS: Final = (",", "\t", ";")
_DIGIT: Final = re.compile(r"\d")
#: Rows of the head compared with the header.
_SNIFF_ROWS: Final = 50


class DelimitedReader:
    """Rows of a CSV or TSV table, keyed by its header."""

    name = "CSV/TSV table"
    #: Its rows are read by the header line above them, which memory_query shows above them too.
    headed = True
    what = "rows"

    def fits(self, lines: Sequence[str]) -> bool:
        return _delimiter(lines) is not None

    def read(self, text: str) -> Iterator[Record]:
        lines = text.split("\n", _SNIFF_ROWS + 1)[: _SNIFF_ROWS + 1]
        delimiter = _delimiter(lines)
        if delimiter is None:
            return
        rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header = next(rows, None)
        if header is None:
            return
        names = unique_names(header)
        line = rows.line_num + 1
        for row in rows:
            if any(cell.strip() for cell in row):
                record: Record = {"line": line}
                for n, cell in enumerate(row):
                    key = names[n] if n < len(names) else f"column_{n + 1}"
                    record[key] = typed(cell)
                yield record
            line = rows.line_num + 1


def _delimiter(lines: Sequence[str]) -> str | None:
    """The delimiter whose header has distinct names, two or more of them words, that nine rows in ten match in
    count."""
    head = [line for line in lines[: _SNIFF_ROWS + 1] if line.strip()]
    if len(head) < 3:
        return None
    for delimiter in _DELIMITERS:
        if delimiter not in head[0]:
            continue
        try:
            rows = list(csv.reader(head, delimiter=delimiter))
        except csv.Error:
            continue
        header = [cell.strip() for cell in rows[0]]
        # Names may be numbers (a wide table's years: `Country Name,…,1960,1961`) when two at least are words and
        # none is shaped as the cells under it (`_like_rows`, below).
        named = sum(1 for cell in header if cell and not _numeric(cell))
        if len(header) < 2 or len(set(header)) < len(header) or named < 2:
            continue
        if sum(1 for cell in header if cell) < len(header) - 1 or max(map(len, header)) > 80:
            continue
        if _like_rows(header, rows[1:]):
            continue
        # The last sniffed row may be cut inside a quoted field.
        matching = sum(1 for row in rows[1:-1] or rows[1:] if len(row) == len(header))
        if matching >= 0.9 * max(len(rows) - 2, 1) and matching >= 1:
            return delimiter
    return None


def _like_rows(header: list[str], rows: list[list[str]]) -> bool:
    """Whether the first row is data, not names: a cell with digits shaped as most cells under it (a timestamp
    in a log whose milliseconds follow a comma)."""
    for n, cell in enumerate(header):
        if not _DIGIT.search(cell):
            continue
        shape = _DIGIT.sub("0", cell)
        under = [_DIGIT.sub("0", row[n].strip()) for row in rows if n < len(row)]
        if under and sum(1 for other in under if other == shape) >= 0.5 * len(under):
            return True
    return False


def _numeric(cell: str) -> bool:
    return isinstance(typed(cell), int | float)
