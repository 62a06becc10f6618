"""`go test -v` runs: one record per `--- PASS/FAIL/SKIP` line (subtests too), its `test`, `package` (from the
`ok`/`FAIL` line after it), `outcome`, `duration` in seconds, and a failed test's `message` (its output lines)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

_RESULT: Final = re.compile(r"^(?P<indent>\s*)--- (?P<o>PASS|FAIL|SKIP): (?P<t>\S+) \((?P<d>[\d.]+)s\)")
_PACKAGE: Final = re.compile(r"^(?:ok|FAIL|---)?\s*(?:ok|FAIL)\s+(?P<p>\S+)\s+(?:[\d.]+s|\(cached\)|\[)")
_RUN: Final = re.compile(r"^\s*=== (?:RUN|PAUSE|CONT|NAME)\s")
_WORDS: Final = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}


class GoTestReader:
    """Tests of a `go test -v` run."""

    name = "go test run"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        return sum(1 for line in lines if _RESULT.match(line)) >= 1 and any(_RUN.match(line) for line in lines)

    def read(self, text: str) -> Iterator[Record]:
        waiting: list[Record] = []
        current: Record | None = None
        for n, row in enumerate(text.split("\n"), start=1):
            if (result := _RESULT.match(row)) is not None:
                current = {
                    "line": n,
                    "test": result.group("t"),
                    "outcome": _WORDS[result.group("o")],
                    "duration": float(result.group("d")),
                }
                waiting.append(current)
            elif (package := _PACKAGE.match(row)) is not None:
                for record in waiting:
                    record["package"] = package.group("p")
                yield from waiting
                waiting, current = [], None
            elif _RUN.match(row):
                current = None
            elif current is not None and current["outcome"] == "failed" and row.strip():
                current["message"] = f"{current.get('message') or ''}\n{row.strip()}".strip()
        yield from waiting
