"""What a record reader is: one kind of table or stream of records, found by its syntax and read into records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

#: A field's value: numbers as numbers (so jq's `max_by` ranks 10 above 9), text as text, absent as null.
Value = str | int | float | bool | None | list["Value"] | dict[str, "Value"]
Record = dict[str, Value]


class RecordReader(Protocol):
    """One kind of tabular text (a CSV table, a commit log, a test run, …)."""

    #: The kind, as the reference names it: "CSV table", "git log", "pytest run".
    name: str
    #: What one record is, plural: "rows", "commits", "tests".
    what: str

    def fits(self, lines: Sequence[str]) -> bool:
        """Whether these first lines of a text (no line breaks) are of this kind."""
        ...

    def read(self, text: str) -> Iterator[Record]:
        """The text's records in order, each with the 1-based `line` it starts on."""
        ...
