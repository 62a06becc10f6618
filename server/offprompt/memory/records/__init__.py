"""Records of a stored text that is a table or a stream of records, for `memory_select` to compute over.

A text that is a CSV/TSV or Markdown table, fixed-width columns (`ps`, `docker ps`, `kubectl get`, `ls -l`), a log,
stanzas of `Key: value` lines (apt's history.log, a Debian control file, `pip show`), a `git log` or a test run
(pytest, unittest, go test, cargo test, Jest/Vitest, JUnit) is read into a JSON array of records,
one per row, event, commit or test, each with the `line` it starts on and its fields as typed values. The reader
is picked by the text's syntax (`detect`, over its head and the readers of `registry.py` in order), never by a
file name. The stored text stays as it came: records are derived from it, made in the background after the
reference, and never searched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from offprompt.memory.chunking import RecordStarts
from offprompt.memory.records.base import Record, RecordReader, Value
from offprompt.memory.records.registry import READERS
from offprompt.memory.records.values import settle_columns

__all__ = [
    "MAX_BYTES",
    "READERS",
    "Record",
    "RecordReader",
    "Summary",
    "Value",
    "detect",
    "make",
    "preview",
    "record_starts",
]

#: The head of a text its kind is told from.
SNIFF_CHARS: Final = 16 * 1024
#: Records of one item take at most this many bytes of JSON; past it they are not kept (and the reason is said).
MAX_BYTES: Final = 64 * 1024**2
#: The last lines searched for a run's summary line the reader spaced its own way.
TOTALS_LINES: Final = 200
#: Fields named in a summary, at most.
SHOWN_FIELDS: Final = 16
_DIGITS: Final = re.compile(r"\d+")
#: A value that starts as an ISO date does (`2026-07-16T19:48:24+10:00`, `2025-06-24  14:36:25`).
_ISO_DATE: Final = re.compile(r"\d{4}-\d\d-\d\d")
#: Records of a head this many lines long each, on average, or more are counted by their start lines' shape.
MULTI_LINE: Final = 1.5
#: Records this many written lines long each, on average, or more are what the chunker cuts along (a commit, a
#: stanza); a log whose events take a line or two keeps its overlapping windows of lines.
RECORD_LINES: Final = 3
#: A categorical field counted in the example, in this order of preference.
_GROUPS: Final = ("outcome", "level", "status", "STATUS", "state", "type", "template")


@dataclass(frozen=True, slots=True)
class Summary:
    """What a text's records are: the reader's kind, how many, their fields, one jq example; `estimated` when
    counted over the head only; `skipped` says why they were not kept; `totals`, the text's own summary line
    where it has one (a unittest run's `Ran 970 tests in 2.181s; OK (skipped=64)`), and the line that says it:
    `totals_at`, its number (0: no one line does, as for several runs' sum), and `totals_line`, as written; a
    table's header line likewise (`header_at`, `header_line`: 0 and "" for a text with none or with several)."""

    kind: str
    what: str
    count: int
    fields: tuple[str, ...]
    example: str
    estimated: bool = False
    skipped: str = ""
    totals: str = ""
    totals_at: int = 0
    totals_line: str = ""
    header_at: int = 0
    header_line: str = ""

    def to_text(self) -> str:
        about = "about " if self.estimated else ""
        more = len(self.fields) - SHOWN_FIELDS
        shown = ", ".join(self.fields[:SHOWN_FIELDS]) + (f" and {more:,} more" if more > 0 else "")
        said = f"; the text says {self.totals!r}" if self.totals else ""
        head = f"Records: {about}{self.count:,} {self.what} of a {self.kind} (fields: {shown}){said}"
        if self.skipped:
            return f"{head}; not kept: {self.skipped}. Read the text with memory_load or memory_grep."
        return f"{head}. memory_select reads them as a JSON array, e.g. expression {self.example!r}."

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["fields"] = list(self.fields)
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        return cls(**{**data, "fields": tuple(data["fields"])})


def detect(text: str, kind: str = "text") -> RecordReader | None:
    """The reader for this text's syntax, if it is a table or a stream of records (JSON is selected as it is)."""
    head = _head(text)
    if kind == "json" or not head.strip() or _is_json(text):
        return None
    lines = head.split("\n")
    return next((reader for reader in READERS if reader.fits(lines)), None)


def preview(text: str, kind: str = "text") -> Summary | None:
    """The summary read from the text's head alone (a few milliseconds for any size): the count is estimated when
    the head is not the whole text."""
    reader = detect(text, kind)
    if reader is None:
        return None
    head = _head(text)
    records = settle_columns(list(reader.read(head)))
    if not records:
        return None
    whole = len(head) == len(text)
    count = len(records) if whole else max(len(records), _estimate(text, head, records))
    summary = _with_header(_summary(reader, records, count, estimated=not whole), reader, head, records)
    return _with_totals(summary, reader, text) if whole else summary


def make(text: str, kind: str = "text", max_bytes: int = MAX_BYTES) -> tuple[Summary, bytes | None] | None:
    """The text's records as a JSON array and their summary; None for a text with none. Past `max_bytes` the
    array is not returned and the summary says why."""
    reader = detect(text, kind)
    if reader is None:
        return None
    records = settle_columns(list(reader.read(text)))
    if not records:
        return None
    data = _json(records)
    summary = _with_totals(_with_header(_summary(reader, records, len(records)), reader, text, records), reader, text)
    if len(data) > max_bytes:
        skipped = f"their JSON would take {len(data):,} bytes, over the cap of {max_bytes:,} bytes for one text"
        return replace(summary, skipped=skipped), None
    return summary, data


def _with_totals(summary: Summary, reader: RecordReader, text: str) -> Summary:
    """The summary with the text's own summary line, from a reader that reads one (a test run's `Ran 7 tests in
    0.01s`), and the line that says it: the last holding its first clause (spaced alike, as Jest's `Tests:   1
    failed` is, among the last lines)."""
    totals = getattr(reader, "totals", None)
    said = str(totals(text)) if callable(totals) else ""
    clause = said.split(";", 1)[0].strip()
    found = text.rfind(clause) if clause else -1
    end = len(text)
    for _ in range(TOTALS_LINES if clause and found < 0 else 0):
        begin = text.rfind("\n", 0, end) + 1
        if " ".join(clause.split()) in " ".join(text[begin:end].split()):
            found = begin
            break
        if begin == 0:
            break
        end = begin - 1
    if found < 0:
        return replace(summary, totals=said)
    begin, end = text.rfind("\n", 0, found) + 1, text.find("\n", found)
    line = text[begin : end if end >= 0 else len(text)].rstrip()
    return replace(summary, totals=said, totals_at=text.count("\n", 0, begin) + 1, totals_line=line)


def _with_header(summary: Summary, reader: RecordReader, text: str, records: Sequence[Record]) -> Summary:
    """The summary with the header line of a reader's one table (`headed`): the nearest line with a word above
    its first row, past a Markdown table's rule. None for a text of several tables (Markdown's `table` field)."""
    if not getattr(reader, "headed", False) or not records or "table" in records[0]:
        return summary
    first = records[0].get("line")
    if not isinstance(first, int) or first < 2:
        return summary
    lines = text.split("\n", first)[: first - 1]
    for at in range(len(lines) - 1, -1, -1):
        if any(ch.isalpha() for ch in lines[at]):
            return replace(summary, header_at=at + 1, header_line=lines[at].rstrip())
    return summary


def _estimate(text: str, head: str, records: Sequence[Record]) -> int:
    """How many records the whole text holds, from those of its head: in proportion to lines, which records follow
    more closely than bytes (a table's later rows are longer: bigger numbers, longer ids). Records of several
    lines do not: a commit's stat or an event's trace takes more lines in one part of a history than another (a
    head of forty-file commits said 202 for 800). Those are counted by the lines that start them
    (`_start_pattern`) over the whole text."""
    pattern = _start_pattern(head, records)
    if pattern is not None:
        return len(pattern.findall(text))
    return round(len(records) * (text.count("\n") + 1) / (head.count("\n") + 1))


def record_starts(text: str, kind: str = "text") -> RecordStarts | None:
    """Where the text's records start, for a text of records of several lines each whose start lines
    `_start_pattern` finds: the chunker cuts along them, so a commit's header, message and stat stay together, and
    names the first and last by `_extremes`. None for any other text (a table, a log of one line an event)."""
    reader = detect(text, kind)
    if reader is None:
        return None
    head = _head(text)
    pattern = _start_pattern(head, list(reader.read(head)), RECORD_LINES)
    if pattern is None:
        return None
    offsets = [start.start() for start in pattern.finditer(text)]
    if len(offsets) < 2:  # one record (`git show`, one `pip show`): nothing to cut along
        return None
    first = next(iter(reader.read(text[offsets[0] : offsets[1]])), None)
    last = next(iter(reader.read(text[offsets[-1] :])), None)
    labels = _extremes(reader.what, len(offsets), first, last)
    return RecordStarts(offsets, *labels)


def _extremes(what: str, count: int, first: Record | None, last: Record | None) -> tuple[str, str]:
    """Labels of a stream's first and last record, in the words a question asks for them by: by their dates
    where both have one (a history lists its newest commit first, so "the very first commit" is its last),
    else by their place in the text."""
    when = [_moment(record) for record in (first, last)]
    if when[0] is not None and when[1] is not None and when[0] != when[1]:
        newest = f"the newest of the {count:,} {what} by date: the latest, most recent"
        oldest = f"the oldest of the {count:,} {what} by date: the earliest, the first"
        return (newest, oldest) if when[0] > when[1] else (oldest, newest)
    return f"the first of the {count:,} {what} in the text", f"the last of the {count:,} {what} in the text"


def _moment(record: Record | None) -> datetime | None:
    """The record's first field that reads as an ISO date and time (a commit's `date`, a stanza's `Start-Date`),
    in UTC where it says its offset; None if it has none."""
    for value in (record or {}).values():
        if isinstance(value, str) and _ISO_DATE.match(value):
            try:
                moment = datetime.fromisoformat(" ".join(value.split()))
            except ValueError:
                continue
            return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    return None


def _start_pattern(head: str, records: Sequence[Record], lines_each: float = MULTI_LINE) -> re.Pattern[str] | None:
    """For records of `lines_each` written lines or more each, on average, the one shape of line (`commit <hash>`, a
    timestamp) that starts every record of the head and no other line of it; None otherwise. A table has none: its
    first column's shape may hold for its head alone (`Adelie` rows, then `Gentoo`), and lines count its rows as
    well."""
    lines = head.split("\n")
    written = sum(1 for line in lines if line.strip())  # a record a line between blank ones is one line
    if not records or written < lines_each * len(records):  # a record a line (a table, most logs)
        return None
    numbers = [r.get("line") for r in records]
    starts = {_start_shape(lines[n - 1]) for n in numbers if isinstance(n, int) and 0 < n <= len(lines)}
    shape = next(iter(starts)) if len(starts) == 1 else None
    if shape is None:
        return None
    pattern = re.compile(shape, re.M)
    return pattern if len(pattern.findall(head)) == len(records) else None


def _start_shape(line: str) -> str | None:
    """A pattern for lines that begin as `line` does: its first word, each run of digits any digits."""
    if not line[:1].strip():
        return None
    word = line.split(None, 1)[0]
    return "^" + _DIGITS.sub(lambda _: r"\d+", re.escape(word)) + r"(?=[ \t]|$)"


def _is_json(text: str) -> bool:
    """JSON text (or JSON Lines) that jq reads as it is."""
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        first = stripped.split("\n", 1)[0]
        try:
            json.loads(first)  # JSON Lines: memory_select reads them as one array already
        except ValueError:
            return False
    return True


def _head(text: str) -> str:
    if len(text) <= SNIFF_CHARS:
        return text
    cut = text.rfind("\n", 0, SNIFF_CHARS)
    return text[: cut if cut > 0 else SNIFF_CHARS]


def _summary(reader: RecordReader, records: Sequence[Record], count: int, *, estimated: bool = False) -> Summary:
    fields = tuple(dict.fromkeys(key for record in records[:1000] for key in record if key != "line"))
    return Summary(reader.name, reader.what, count, (*fields, "line"), _example(fields, records), estimated)


def _example(fields: Sequence[str], records: Sequence[Record]) -> str:
    """One jq line that computes over these records: a count by a category, else the record with the longest list
    or most of a number."""
    sample = records[:200]
    for name in _GROUPS:
        values = {r.get(name) for r in sample}
        if name in fields and 1 < len(values - {None}) <= 12:
            return f"group_by(.{name}) | map({{{name}: .[0].{name}, count: length}})"
    for name in fields:
        if _jq_name(name) and any(isinstance(r.get(name), list) for r in sample):
            return f"max_by(.{name} | length)"
    for name in ("files_changed", "size", "duration", *fields):
        if name in fields and name != "table" and _jq_name(name) and any(_numeric(r.get(name)) for r in sample):
            return f"max_by(.{name})"
    return "length"


def _numeric(value: Value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _jq_name(name: str) -> bool:
    return name.isidentifier()


def _json(records: Sequence[Record]) -> bytes:
    try:
        return orjson.dumps(records)
    except TypeError:  # an integer past 64 bits
        return json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode()
