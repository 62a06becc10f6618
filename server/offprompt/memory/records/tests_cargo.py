"""`cargo test` runs: one record per `test NAME ... ok|FAILED|ignored` line, its `test`, `outcome`, and a failed
test's `message` (the panic from its `---- NAME stdout ----` section)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

_RESULT: Final = re.compile(r"^test (?P<t>\S+)(?: - should panic)? \.\.\. (?P<o>ok|FAILED|ignored|bench)\b")
_STDOUT: Final = re.compile(r"^---- (?P<t>\S+) stdout ----$")
_PANIC: Final = re.compile(r"^thread '[^']*' panicked at (?P<at>[^\n]*?):?$")
#: One test binary's verdict and counts; a workspace prints one per binary (unit, integration, doctests).
_TOTALS: Final = re.compile(r"^test result: \w+\. (?P<p>\d+) passed; (?P<f>\d+) failed; (?P<i>\d+) ignored\b")
_WORDS: Final = {"ok": "passed", "FAILED": "failed", "ignored": "skipped", "bench": "passed"}


class CargoTestReader:
    """Tests of a `cargo test` run."""

    name = "cargo test run"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        results = sum(1 for line in lines if _RESULT.match(line))
        running = any(line.startswith("running ") and " test" in line for line in lines)
        return results >= 2 or (running and results >= 1)

    def read(self, text: str) -> Iterator[Record]:
        tests: dict[str, Record] = {}
        section: str | None = None
        panic: list[str] = []
        for n, row in enumerate(text.split("\n"), start=1):
            if (result := _RESULT.match(row)) is not None:
                tests[result.group("t")] = {"line": n, "test": result.group("t"), "outcome": _WORDS[result.group("o")]}
            elif (heading := _STDOUT.match(row)) is not None:
                section, panic = heading.group("t"), []
            elif section is not None:
                if not row.strip() or row.startswith(("note:", "----", "failures:")):
                    if section in tests and panic:
                        tests[section]["message"] = "\n".join(panic)
                    section = None if not row.startswith("----") else section
                else:
                    found = _PANIC.match(row)
                    panic.append(f"panicked at {found.group('at')}" if found else row.strip())
        yield from tests.values()

    def totals(self, text: str) -> str:
        """The run's own verdict, `test result: ok. 5 passed; 0 failed; …`; over several binaries, their sum."""
        rows = [row.strip() for row in text.split("\n") if _TOTALS.match(row)]
        if len(rows) <= 1:
            return rows[0] if rows else ""
        found = [_TOTALS.match(row) for row in rows]
        passed, failed, ignored = (sum(int(m.group(k)) for m in found if m) for k in "pfi")
        return f"{len(rows)} test results: {passed} passed; {failed} failed; {ignored} ignored in all"
