"""JUnit-style results: the XML report (`<testcase name classname time>` with `<failure message>`, `<skipped>`),
and Maven Surefire's and Gradle's text summaries (`Tests run: 5, Failures: 1, … - in com.x.FooTest`): one record
per test case, or per class where only the summary is given (its counts as fields)."""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Iterator, Sequence
from typing import Final

from offprompt.memory.records.base import Record

_SUITE: Final = re.compile(r"^\s*<testsuites?\b", re.M)
_CASE: Final = re.compile(r"<testcase\b(?P<attrs>[^>]*?)(?:/>|>(?P<body>.*?)</testcase>)", re.S)
_ATTR: Final = re.compile(r'(\w+)="([^"]*)"')
_FAILURE: Final = re.compile(r"<(?P<k>failure|error)\b(?P<attrs>[^>]*)(?:/>|>(?P<body>.*?)</(?P=k)>)", re.S)
_SUREFIRE: Final = re.compile(
    r"Tests run: (?P<run>\d+), Failures: (?P<failures>\d+), Errors: (?P<errors>\d+), Skipped: (?P<skipped>\d+)"
    r"(?:, Time elapsed: (?P<time>[\d.,]+) ?s(?:ec)?)?(?: <<< (?P<flag>FAILURE|ERROR)!)?(?: -+ in (?P<cls>\S+))?"
)
_GRADLE: Final = re.compile(r"^(?P<cls>[\w.$]+) > (?P<t>.+?) (?P<o>PASSED|FAILED|SKIPPED)\s*$")
_WORDS: Final = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped"}


class JUnitReader:
    """Test cases of a JUnit XML report, or classes of a Surefire/Gradle summary."""

    name = "JUnit report"
    what = "tests"

    def fits(self, lines: Sequence[str]) -> bool:
        head = "\n".join(lines)
        return (
            _SUITE.search(head) is not None
            or len(_SUREFIRE.findall(head)) >= 1
            or sum(1 for line in lines if _GRADLE.match(line)) >= 2
        )

    def read(self, text: str) -> Iterator[Record]:
        if "<testcase" in text:
            yield from _xml(text)
            return
        for n, row in enumerate(text.split("\n"), start=1):
            if (gradle := _GRADLE.match(row)) is not None:
                yield {
                    "line": n,
                    "test": f"{gradle.group('cls')}.{gradle.group('t')}",
                    "class": gradle.group("cls"),
                    "outcome": _WORDS[gradle.group("o")],
                }
            elif (summary := _SUREFIRE.search(row)) is not None and summary.group("cls"):
                failed = int(summary.group("failures")) + int(summary.group("errors"))
                record: Record = {
                    "line": n,
                    "test": summary.group("cls"),
                    "class": summary.group("cls"),
                    "outcome": "failed" if failed else "passed",
                }
                for key in ("run", "failures", "errors", "skipped"):
                    record[key] = int(summary.group(key))
                if summary.group("time"):
                    record["duration"] = float(summary.group("time").replace(",", ""))
                yield record


def _xml(text: str) -> Iterator[Record]:
    for case in _CASE.finditer(text):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(case.group("attrs"))}
        body = case.group("body") or ""
        record: Record = {
            "line": text.count("\n", 0, case.start()) + 1,
            "test": attrs.get("name", ""),
            "class": attrs.get("classname"),
            "outcome": "passed",
        }
        if "time" in attrs:
            with contextlib.suppress(ValueError):
                record["duration"] = float(attrs["time"].replace(",", ""))
        failure = _FAILURE.search(body)
        if failure is not None:
            record["outcome"] = "failed" if failure.group("k") == "failure" else "error"
            found = dict(_ATTR.findall(failure.group("attrs")))
            message = html.unescape(found.get("message", "")) or html.unescape(failure.group("body") or "").strip()
            record["message"] = message.split("\n", 1)[0]
        elif "<skipped" in body:
            record["outcome"] = "skipped"
        yield record
