"""`git log` (with `--stat`, `--shortstat` or `--numstat`, or none) and `git log --oneline`: one record per commit,
its `hash`, `author`, `email`, `date` (ISO 8601), `subject`, `merge`, and with a stat `files_changed`, `insertions`,
`deletions` and `files` (each path with its lines changed)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Final

from offprompt.memory.records.base import Record, Value

_COMMIT: Final = re.compile(r"^commit ([0-9a-f]{7,64})\b(?: \((.*)\))?", re.M)
_AUTHOR: Final = re.compile(r"^Author:\s*(.*?)\s*(?:<([^>]*)>)?\s*$")
_DATE: Final = re.compile(r"^(?:Author)?Date:\s*(.+?)\s*$")
_SUMMARY: Final = re.compile(r"^\s*(\d+) files? changed(?:, (\d+) insertions?\(\+\))?(?:, (\d+) deletions?\(-\))?\s*$")
_STAT_FILE: Final = re.compile(r"^ (\S.*?)\s+\|\s+(\d+|Bin[^\n]*)")
_NUMSTAT: Final = re.compile(r"^(\d+|-)\t(\d+|-)\t(.+)$")
_ONELINE: Final = re.compile(r"^[*|/\\ ]*([0-9a-f]{7,40}) (?:\(([^)\n]*)\) )?(\S.*)$")
_GIT_DATES: Final = (
    "%a %b %d %H:%M:%S %Y %z",
    "%Y-%m-%d %H:%M:%S %z",
    "%Y-%m-%dT%H:%M:%S%z",
    "%a, %d %b %Y %H:%M:%S %z",
)


class CommitsReader:
    """Commits of `git log`."""

    name = "git log"
    what = "commits"

    def fits(self, lines: Sequence[str]) -> bool:
        rows = [line for line in lines[:60] if line.strip()]
        if rows and _COMMIT.match(rows[0]) and any(_AUTHOR.match(r) or _DATE.match(r) for r in rows[1:4]):
            return True
        return len(rows) >= 3 and sum(1 for row in rows if _ONELINE.match(row)) >= 0.8 * len(rows)

    def read(self, text: str) -> Iterator[Record]:
        starts = list(_COMMIT.finditer(text))
        if not starts:
            yield from _oneline(text)
            return
        found = []
        for k, m in enumerate(starts):
            end = starts[k + 1].start() if k + 1 < len(starts) else len(text)
            found.append(_commit(m, text[m.end() : end], text.count("\n", 0, m.start()) + 1))
        if any("files_changed" in c for c in found):
            for commit in found:
                for key in ("files_changed", "insertions", "deletions"):
                    commit.setdefault(key, 0)
                commit.setdefault("files", [])
        yield from found


def _commit(head: re.Match[str], body: str, line: int) -> Record:
    record: Record = {"line": line, "hash": head.group(1)}
    if head.group(2):
        record["refs"] = head.group(2)
    message: list[str] = []
    files: list[dict[str, Value]] = []
    for row in body.split("\n")[1:]:
        if row.startswith("    ") or (not row.strip() and message):
            message.append(row[4:])
        elif (author := _AUTHOR.match(row)) is not None and "author" not in record:
            record["author"], record["email"] = author.group(1), author.group(2)
        elif (date := _DATE.match(row)) is not None and "date" not in record:
            record["date"] = _iso(date.group(1))
        elif row.startswith("Merge:"):
            record["merge"] = True
        else:
            _stat(row, record, files)
    text = "\n".join(message).strip()
    record["subject"] = text.split("\n", 1)[0]
    record["body"] = text.split("\n", 1)[1].strip() if "\n" in text else ""
    record.setdefault("merge", False)
    if files:
        record["files"] = list[Value](files)
        if "files_changed" not in record:  # --numstat: the sums of its rows
            record["files_changed"] = len(files)
            record["insertions"] = sum(_count(f.get("insertions")) for f in files)
            record["deletions"] = sum(_count(f.get("deletions")) for f in files)
    return record


def _count(value: Value) -> int:
    return value if isinstance(value, int) else 0


def _stat(row: str, record: Record, files: list[dict[str, Value]]) -> None:
    """A line of `--stat`, `--shortstat` or `--numstat` into the record."""
    if (summary := _SUMMARY.match(row)) is not None:
        record["files_changed"] = int(summary.group(1))
        record["insertions"] = int(summary.group(2) or 0)
        record["deletions"] = int(summary.group(3) or 0)
    elif (numstat := _NUMSTAT.match(row)) is not None:
        added, removed = (None if g == "-" else int(g) for g in numstat.group(1, 2))
        files.append({"path": numstat.group(3), "insertions": added, "deletions": removed})
    elif (changed := _STAT_FILE.match(row)) is not None:
        lines = changed.group(2)
        files.append({"path": changed.group(1), "changes": int(lines) if lines.isdigit() else None})


def _iso(written: str) -> str:
    for pattern in _GIT_DATES:
        try:
            return datetime.strptime(written, pattern).isoformat()
        except ValueError:
            continue
    return written


def _oneline(text: str) -> Iterator[Record]:
    for n, row in enumerate(text.split("\n"), start=1):
        found = _ONELINE.match(row)
        if found is not None:
            record: Record = {"line": n, "hash": found.group(1), "subject": found.group(3)}
            if found.group(2):
                record["refs"] = found.group(2)
            yield record
