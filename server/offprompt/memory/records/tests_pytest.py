"""`pytest -v` runs (and `-rA`, xdist's `[gw0]` lines): one record per test, its `test` id, `file`, `outcome`,
`duration` in seconds where `--durations` printed it, a failed test's `message` (its line of the short summary,
else the first `E` line of its failure), and a skipped or xfailed test's `reason` (printed beside its outcome,
else -rs's line for its file when it is that file's one skipped test), as unittest's records name them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

_OUTCOMES: Final = "PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS"
_RESULT: Final = re.compile(
    rf"^(?:\[gw\d+\] \[\s*\d+%\] (?P<o1>{_OUTCOMES}) (?P<t1>\S+::\S.*?)|(?P<t2>\S+::\S.*?) (?P<o2>{_OUTCOMES})"
    r"(?: \((?P<why>.*)\))?(?:\s+\[\s*\d+%\])?)\s*$"
)
_SUMMARY: Final = re.compile(rf"^(?P<o>{_OUTCOMES}) (?P<t>\S+::\S+?)(?: - (?P<m>.*))?$")
#: -rs's line for skipped tests, by the file and line that skipped them: `SKIPPED [2] tests/b.py:7: needs pandoc`.
_SKIP_SUMMARY: Final = re.compile(r"^SKIPPED \[\d+\] (?P<file>[^:\s]+):\d+: (?P<m>.*)$")
_SECTION: Final = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_E_LINE: Final = re.compile(r"^E\s+(?P<m>\S.*)$")
#: The run's last line: `==== 2 failed, 2 passed, 1 skipped in 0.31s ====` (and `no tests ran in 0.01s`).
_TOTALS: Final = re.compile(r"^=+ (?P<s>[^=]*\bin \d+(?:\.\d+)?s\b[^=]*?) =+$")
_DURATION: Final = re.compile(r"^(?P<s>\d+\.\d+)s (?:call|setup|teardown)\s+(?P<t>\S+::\S+)")
_WORDS: Final = {
    "PASSED": "passed",
    "FAILED": "failed",
    "SKIPPED": "skipped",
    "ERROR": "error",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}


class PytestReader:
    """Tests of a `pytest -v` run."""

    name = "pytest run"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        return sum(1 for line in lines if _RESULT.match(line)) >= 2

    def read(self, text: str) -> Iterator[Record]:
        tests: dict[str, Record] = {}
        messages: dict[str, str] = {}
        durations: dict[str, float] = {}
        skips: dict[str, list[str]] = {}
        section = ""
        for n, row in enumerate(text.split("\n"), start=1):
            if (result := _RESULT.match(row)) is not None:
                test = result.group("t1") or result.group("t2")
                outcome = result.group("o1") or result.group("o2")
                tests.setdefault(test, {"line": n, "test": test, "file": test.split("::", 1)[0]})
                tests[test]["outcome"] = _WORDS[outcome]
                if result.group("why"):
                    messages[test] = result.group("why")
            elif (skip := _SKIP_SUMMARY.match(row)) is not None:
                skips.setdefault(skip.group("file"), []).append(skip.group("m"))
            elif (summary := _SUMMARY.match(row)) is not None and summary.group("m"):
                messages[summary.group("t")] = summary.group("m")
            elif (heading := _SECTION.match(row)) is not None:
                section = heading.group("name")
            elif (error := _E_LINE.match(row)) is not None and section:
                messages.setdefault(f"::{section}", error.group("m"))
            elif (timed := _DURATION.match(row)) is not None:
                durations[timed.group("t")] = durations.get(timed.group("t"), 0.0) + float(timed.group("s"))
        skipped = Counter(str(t["file"]) for t in tests.values() if t["outcome"] == "skipped")
        for test, record in tests.items():
            if test in durations:
                record["duration"] = round(durations[test], 6)
            if record["outcome"] in ("failed", "error"):
                record["message"] = messages.get(test) or messages.get(f"::{_section_name(test)}")
            elif record["outcome"] in ("skipped", "xfailed"):
                record["reason"] = messages.get(test) or _one_reason(skipped, skips, record)
            yield record

    def totals(self, text: str) -> str:
        """The run's own count and time, `2 failed, 2 passed, 1 skipped in 0.31s` (its last summary line)."""
        return next((m.group("s") for row in reversed(text.split("\n")) if (m := _TOTALS.match(row))), "")


def _one_reason(skipped: Counter[str], skips: dict[str, list[str]], record: Record) -> str | None:
    """-rs's reason for a skipped test that printed none, when it is its file's one skipped test and one line."""
    reasons = skips.get(str(record["file"]), [])
    one = len(reasons) == 1 and skipped[str(record["file"])] == 1
    return reasons[0] if one and record["outcome"] == "skipped" else None


def _section_name(test: str) -> str:
    """The failure section's title of a test id: `TestX.test_y[1]` for `f.py::TestX::test_y[1]`."""
    return ".".join(test.split("::")[1:])
