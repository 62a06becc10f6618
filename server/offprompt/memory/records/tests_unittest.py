"""Python `unittest -v` runs: one record per test, its `test` id (`pkg.mod.Class.test_x`), `name`, `class`,
`module`, `outcome`, a skipped test's `reason`, a docstring's first line as `description`, and a failed or erring
test's `message` (the exception its `FAIL:` or `ERROR:` block ends with). The `Ran N tests in Xs` line and the
verdict under it are the run's `totals`; a log of several runs (CPython's regrtest, one per test file) is read
whole, each result line a record."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

#: `test_x (pkg.mod.Class.test_x)` (Python 3.11 on) or `test_x (pkg.mod.Class)` (before), with its verdict after
#: ` ... ` on the same line, or on a later one when a docstring or the test's own output comes between.
_TEST: Final = re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]*)\)(?P<rest>.*)$")
_VERDICT: Final = re.compile(
    r"(?:^|\.\.\. )(?P<o>ok|FAIL|ERROR|expected failure|unexpected success|skipped (?P<why>.*))\s*$"
)
_BLOCK: Final = re.compile(r"^(?P<o>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\w+) \((?P<where>[\w.]+)\)")
_RULE: Final = re.compile(r"^(?:-{20,}|={20,})$")
_RAN: Final = re.compile(r"^Ran (?P<n>\d+) tests? in (?P<s>[\d.]+)s$")
_WORDS: Final = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "expected failure": "xfailed",
    "unexpected success": "xpassed",
}
#: Lines of an exception's message kept (an assertEqual diff runs on).
_MESSAGE_LINES: Final = 5


class UnittestReader:
    """Tests of a `python -m unittest -v` run."""

    name = "unittest run"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        named = sum(1 for line in lines if _TEST.match(line) and (" ... " in line or line.endswith(")")))
        return named >= 2 and any(" ... " in line and _VERDICT.search(line) for line in lines)

    def read(self, text: str) -> Iterator[Record]:
        rows = text.split("\n")
        tests: list[Record] = []  # each result line its record: a test run twice (regrtest's runs) is two
        waiting: Record | None = None  # a test whose verdict has not come yet
        in_block = False  # inside the FAIL:/ERROR: blocks after a run's results, until its `Ran` line
        for n, row in enumerate(rows, start=1):
            if _BLOCK.match(row) or _RAN.match(row):
                in_block, waiting = _BLOCK.match(row) is not None, None
                continue
            found = None if in_block else _TEST.match(row)
            if found is not None:
                waiting = _record(n, _test_id(found.group("name"), found.group("where")), found.group("name"))
                tests.append(waiting)
                row = found.group("rest")
            elif waiting is not None and "description" not in waiting:
                said = row.split(" ... ", 1)[0].strip()
                if said and not _VERDICT.fullmatch(said) and not _RULE.match(said):
                    waiting["description"] = said
            verdict = _VERDICT.search(row)
            if waiting is not None and verdict is not None:
                _decide(waiting, verdict)
                waiting = None
        messages = _messages(rows)
        for record in tests:
            if record["outcome"] in ("failed", "error") and record["test"] in messages:
                record["message"] = messages[str(record["test"])]
        yield from tests

    def totals(self, text: str) -> str:
        """The run's own count and verdict, `Ran 970 tests in 2.181s; OK (skipped=64)`; over several runs (CPython's
        regrtest, one per test file) their sum and verdicts."""
        rows = text.split("\n")
        runs: list[tuple[str, int, float, str]] = []
        for k, row in enumerate(rows):
            if (ran := _RAN.match(row)) is not None:
                verdict = next((r.strip() for r in rows[k + 1 : k + 4] if r.strip()), "")
                runs.append((row.strip(), int(ran.group("n")), float(ran.group("s")), verdict))
        if len(runs) <= 1:
            return "; ".join(filter(None, runs[0][::3])) if runs else ""
        verdicts = ", ".join(dict.fromkeys(run[3] for run in runs if run[3]))
        count, seconds = sum(run[1] for run in runs), sum(run[2] for run in runs)
        return f"{len(runs)} runs: Ran {count} tests in {seconds:.3f}s in all; {verdicts}"


def _test_id(name: str, where: str) -> str:
    """`pkg.mod.Class.test_x` from either form; a module's doctest (`json ()`) is its name."""
    if not where:
        return name
    return where if where.endswith(f".{name}") else f"{where}.{name}"


def _record(line: int, test: str, name: str) -> Record:
    owner = test[: -len(name) - 1]
    module, _, cls = owner.rpartition(".")
    return {"line": line, "test": test, "name": name, "class": cls, "module": module, "outcome": None}


def _decide(record: Record, verdict: re.Match[str]) -> None:
    word = verdict.group("o")
    if word.startswith("skipped"):
        record["outcome"] = "skipped"
        record["reason"] = (verdict.group("why") or "").strip().strip("'\"")
    else:
        record["outcome"] = _WORDS[word]


def _messages(rows: Sequence[str]) -> dict[str, str]:
    """Each `FAIL:`/`ERROR:` block's test and its exception: the first line after the last traceback's frames, and
    the lines under it up to the block's end."""
    found: dict[str, str] = {}
    k = 0
    while k < len(rows):
        block = _BLOCK.match(rows[k])
        k += 1
        if block is None:
            continue
        body: list[str] = []
        while k < len(rows) and not (_BLOCK.match(rows[k]) or _RAN.match(rows[k])):
            body.append(rows[k])
            k += 1
        message = _exception(body)
        if message:
            found.setdefault(_test_id(block.group("name"), block.group("where")), message)
    return found


def _exception(body: Sequence[str]) -> str:
    starts = [k for k, row in enumerate(body) if row.startswith("Traceback (most recent call last)")]
    if not starts:
        return ""
    k = starts[-1] + 1
    while k < len(body) and (body[k].startswith(" ") or not body[k].strip()):
        k += 1
    kept: list[str] = []
    for row in body[k : k + _MESSAGE_LINES]:
        if _RULE.match(row) or (not row.strip() and kept):
            break
        kept.append(row.rstrip())
    return "\n".join(kept).strip()
