"""Jest and Vitest runs: one record per test mark (a tick passed, a cross failed, `○`/`↓` skipped or todo),
its `test` (with its file for Vitest's `file > suite > name`), `file` (the `PASS`/`FAIL` line above it), `outcome`,
`duration` in seconds, and a failed test's `message` (the first line under its `●` heading)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

_MARK: Final = re.compile(
    "^\\s*(?P<m>[✓√✔✕\u00d7✖○↓])"
    r"\s+(?P<t>.+?)(?:\s+\(?(?P<d>\d+(?:\.\d+)?)\s?(?P<u>ms|s)\)?)?\s*$"
)
_FILE: Final = re.compile(r"^\s*(?P<o>PASS|FAIL)\s+(?P<f>\S+)")
#: A failure's heading: Jest's `● Suite, arrow, name`, Vitest's `FAIL file > suite > name`.
_FAILURE: Final = re.compile(r"^\s*●\s+(?P<t>.+?)\s*$|^\s*FAIL\s+(?P<v>\S+ > .+?)\s*$")
_WORDS: Final = {
    "✓": "passed",
    "√": "passed",
    "✔": "passed",
    "✕": "failed",
    "\u00d7": "failed",
    "✖": "failed",
    "○": "skipped",
    "↓": "skipped",
}


#: The run's summary lines: Jest's `Tests:   1 failed, 3 passed, 5 total`, Vitest's `Tests  1 failed | 2 passed (4)`.
_TOTALS: Final = re.compile(r"^\s*(?:Test Suites|Test Files|Tests)\b:?\s+\d+ (?:passed|failed|skipped|todo|total)\b")


class JestReader:
    """Tests of a Jest or Vitest run."""

    name = "jest/vitest run"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        marks = sum(1 for line in lines if _MARK.match(line))
        return marks >= 2 and (any(_FILE.match(line) for line in lines) or marks >= 0.3 * len(lines))

    def read(self, text: str) -> Iterator[Record]:
        tests: list[Record] = []
        file: str | None = None
        failing: Record | None = None
        for n, row in enumerate(text.split("\n"), start=1):
            if (mark := _MARK.match(row)) is not None:
                record: Record = {"line": n, "test": mark.group("t"), "file": file, "outcome": _WORDS[mark.group("m")]}
                if mark.group("d"):
                    scale = 1000 if mark.group("u") == "ms" else 1
                    record["duration"] = float(mark.group("d")) / scale
                if " > " in mark.group("t") and file is None:
                    record["file"] = mark.group("t").split(" > ", 1)[0]
                tests.append(record)
            elif (heading := _FAILURE.match(row)) is not None:
                failing = _failed(tests, heading.group("t") or heading.group("v"))
            elif (found := _FILE.match(row)) is not None:
                file = found.group("f")
            elif failing is not None and row.strip() and "message" not in failing:
                failing["message"] = row.strip()
        yield from tests

    def totals(self, text: str) -> str:
        """The run's own counts, `Test Suites: 1 failed, 1 passed, 2 total; Tests: 1 failed, 3 passed, 4 total`."""
        rows = [row.strip() for row in text.split("\n") if _TOTALS.match(row)]
        return "; ".join(" ".join(row.split(None, 1)) if ":" in row else row for row in rows[-2:])


def _failed(tests: list[Record], heading: str) -> Record | None:
    """The failed test a `● Suite (arrow) name` (Jest) or `FAIL file > suite > name` (Vitest) heading is about."""
    name = re.split(" [\u203a>] ", heading)[-1].strip()
    return next((t for t in tests if t["outcome"] == "failed" and str(t["test"]).endswith(name)), None)
