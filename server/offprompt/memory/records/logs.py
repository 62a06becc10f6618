"""Log lines: one record per event (a line that starts with a timestamp, with the lines under it that do not, such
as a traceback), its `time` as written, `level`, `message`, the message's `template` (its words holding digits as
`<*>`, so `group_by(.template)` counts lines of one shape), and the message's `key=value` pairs as fields."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record
from offprompt.memory.records.values import typed

#: A time zone as logs write it after the time: `Z`, an offset, or a zone's abbreviation (PostgreSQL's `%m`
#: writes `2026-11-30 08:00:01.120 UTC`; syslog-style servers their local `CET`, `PDT`).
ZONE: Final = (
    r"(?:Z|\s?[+-]\d\d:?\d\d|\s(?:UTC|GMT|[ECW]ES?T|BST|IST|MSK|[ECMP][SD]T|AK[SD]T|HST|[JK]ST|A[CEW][SD]T|NZ[SD]T|SGT"
    r"|HKT)\b)?"
)
_TIME: Final = re.compile(
    r"^\s*\[?(?P<t>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?" + ZONE + r"|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d"
    r"(?:[.,]\d+)?|[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d|\d{10}(?:\.\d+)?|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?[\s:,|-]*"
)
#: A level word; PostgreSQL's `LOG:` (its severity of routine events) only in capitals before a colon, since `log`
#: is a word of messages too, and its `DEBUG1` to `DEBUG5` as DEBUG.
_LEVEL: Final = re.compile(
    r"^[\[(<]?(?:level=)?(?P<l>TRACE|DEBUG(?:[1-5]\b)?|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|CRIT|FATAL|ALERT"
    r"|EMERG|PANIC|(?-i:LOG)(?=:))\b[\])>:]?\s*[:|-]?\s*",
    re.IGNORECASE,
)
#: Words before the level that name where the line comes from (`host app[12]:`, `[main]`), at most this many.
_BEFORE_LEVEL: Final = 3
_NORMAL: Final = {"WARNING": "WARN", "ERR": "ERROR", "CRIT": "CRITICAL"}
_PAIR: Final = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]{0,40})=(\"[^\"]*\"|'[^']*'|[^\s,;]+)")
_DIGIT: Final = re.compile(r"\d")
#: Fields a `key=value` pair may not overwrite.
_OWN: Final = frozenset({"line", "time", "level", "message", "template"})


class LogReader:
    """Events of a log whose lines start with a timestamp."""

    name = "log"
    what = "events"

    def fits(self, lines: Sequence[str]) -> bool:
        rows = [line for line in lines if line.strip()]
        return len(rows) >= 2 and sum(1 for row in rows if _TIME.match(row)) >= 0.5 * len(rows)

    def read(self, text: str) -> Iterator[Record]:
        record: Record | None = None
        extra: list[str] = []
        for n, row in enumerate(text.split("\n"), start=1):
            stamp = _TIME.match(row)
            if stamp is None:
                if record is not None and row.strip():
                    extra.append(row)
                continue
            if record is not None:
                yield _finished(record, extra)
            record, extra = _event(n, stamp.group("t"), row[stamp.end() :]), []
        if record is not None:
            yield _finished(record, extra)


def _event(line: int, time: str, rest: str) -> Record:
    level = None
    words = rest.split(" ")
    for skip in range(min(_BEFORE_LEVEL, len(words)) + 1):
        tail = " ".join(words[skip:])
        found = _LEVEL.match(tail)
        if found is not None:
            level = found.group("l").upper().rstrip("12345")
            level = _NORMAL.get(level, level)
            head = " ".join(words[:skip])
            rest = f"{head} {tail[found.end() :]}" if head else tail[found.end() :]
            break
    message = rest.strip()
    record: Record = {"line": line, "time": time, "level": level, "message": message}
    record["template"] = " ".join("<*>" if _DIGIT.search(w) else w for w in message.split())
    for key, value in _PAIR.findall(message):
        if key not in _OWN and key not in record:
            record[key] = typed(value.strip("\"'"))
    return record


def _finished(record: Record, extra: list[str]) -> Record:
    if extra:
        record["message"] = f"{record['message']}\n" + "\n".join(extra)
    return record
