"""Markdown tables (GitHub's pipe tables) that make most of a text: a header row, a `---` row, then rows; every
table of the text, each record naming its `table` (1, 2, …) when there are several."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record
from offprompt.memory.records.values import typed, unique_names

_ROW: Final = re.compile(r"^\s*\|.*\|\s*$|^[^|\n]+(?:\|[^|\n]*)+$")
_RULE: Final = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT: Final = re.compile(r"(?<!\\)\|")


class MarkdownTableReader:
    """The rows of each pipe table, keyed by its header."""

    name = "Markdown table"
    #: Its rows are read by the header line above them, which memory_query shows above them too.
    headed = True
    what = "rows"

    def fits(self, lines: Sequence[str]) -> bool:
        """A table that is most of the text: a document with a table in it is read as a document."""
        rows = [line for line in lines if line.strip()]
        tables = sum(1 for line in rows if "|" in line and _ROW.match(line))
        if tables < 0.5 * len(rows):
            return False
        for n in range(1, len(lines) - 1):
            if _RULE.match(lines[n]) and "|" in lines[n - 1] and _ROW.match(lines[n + 1]) and "|" in lines[n]:
                return True
        return False

    def read(self, text: str) -> Iterator[Record]:
        lines = text.split("\n")
        tables = [n for n in range(1, len(lines)) if _RULE.match(lines[n]) and "|" in lines[n - 1] and "|" in lines[n]]
        for number, rule in enumerate(tables, start=1):
            names = unique_names(_cells(lines[rule - 1]))
            at = rule + 1
            while at < len(lines) and "|" in lines[at] and _ROW.match(lines[at]):
                record: Record = {"line": at + 1}
                if len(tables) > 1:
                    record["table"] = number
                for n, cell in enumerate(_cells(lines[at])):
                    record[names[n] if n < len(names) else f"column_{n + 1}"] = typed(cell.replace("\\|", "|"))
                yield record
                at += 1


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip() for cell in _CELL_SPLIT.split(inner)]
