"""`ls -l` listings (and `ls -la`, `-lh`, `-R`): one record per entry, its mode, links, owner, group, size in bytes,
modification time as written, name and link target; `dir` for a recursive listing's directory."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record
from offprompt.memory.records.values import typed

_ENTRY: Final = re.compile(
    r"^(?P<mode>[-dlcbpsD][-rwxsStTl]{9}[.+@]?)\s+(?P<links>\d+)\s+(?P<owner>\S+)\s+(?:(?P<group>\S+)\s+)?"
    r"(?P<size>\d[\d.,]*[KMGTP]?|\d+,\s*\d+)\s+"
    r"(?P<modified>\w{3}\s+\d{1,2}\s+(?:\d{1,2}:\d\d|\d{4})|\d{4}-\d\d-\d\d(?:\s+\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?"
    r"(?:\s+[+-]\d{4})?|\d{1,2}\s+\w{3}\s+(?:\d{1,2}:\d\d|\d{4}))\s(?P<name>.*)$"
)
_DIR: Final = re.compile(r"^(\S.*):$")
_TOTAL: Final = re.compile(r"^total \d")


class ListingReader:
    """Entries of `ls -l`."""

    name = "listing (ls -l)"
    what = "entries"

    def fits(self, lines: Sequence[str]) -> bool:
        rows = [line for line in lines if line.strip() and not _TOTAL.match(line) and not _DIR.match(line)]
        return len(rows) >= 2 and sum(1 for row in rows if _ENTRY.match(row)) >= 0.8 * len(rows)

    def read(self, text: str) -> Iterator[Record]:
        directory: str | None = None
        for n, row in enumerate(text.split("\n"), start=1):
            entry = _ENTRY.match(row)
            if entry is None:
                heading = _DIR.match(row)
                if heading is not None:
                    directory = heading.group(1)
                continue
            name, _, target = entry.group("name").partition(" -> ")
            record: Record = {
                "line": n,
                "mode": entry.group("mode"),
                "type": _TYPES.get(entry.group("mode")[0], "other"),
                "links": int(entry.group("links")),
                "owner": entry.group("owner"),
                "group": entry.group("group"),
                "size": typed(entry.group("size")),
                "modified": " ".join(entry.group("modified").split()),
                "name": name,
            }
            if target:
                record["target"] = target
            if directory is not None:
                record["dir"] = directory
            yield record


_TYPES: Final = {
    "-": "file",
    "d": "directory",
    "l": "link",
    "c": "character device",
    "b": "block device",
    "p": "pipe",
    "s": "socket",
    "D": "door",
}
