"""Commit lists (`git log`, `git log --oneline`): one entry per commit, its hash, date and subject.

A commit log has no levels and repeats a few line shapes, so the log outline would summarise it as templates of
"Author:" and "Date:" lines; the model wants the commits: which one changed what, and when.
"""

from __future__ import annotations

import re
from typing import Final

from offprompt.memory.outline.entries import Found

_FULL: Final = re.compile(
    r"^commit ([0-9a-f]{7,40})\b[^\n]*\n(?:(?:Merge|Author|AuthorDate|Commit|CommitDate|Date):[^\n]*\n)+", re.M
)
_DATE: Final = re.compile(r"^(?:Author)?Date:\s*(.+)$", re.M)
_ONELINE: Final = re.compile(r"^[*|/\\ ]*([0-9a-f]{7,40}) (?:\([^)\n]*\) )?(\S[^\n]*)$")
#: Lines looked at to decide whether a text is a commit list.
_SNIFF: Final = 60


def looks_like(text: str) -> bool:
    """Whether the text is `git log` output: full commits, or mostly `--oneline` rows."""
    head = text[:20_000]
    if _FULL.search(head) and head.lstrip().startswith("commit "):
        return True
    rows = [row for row in head.split("\n")[:_SNIFF] if row.strip()]
    return len(rows) >= 3 and sum(1 for row in rows if _ONELINE.match(row)) >= 0.8 * len(rows)


def outline(text: str) -> list[Found]:
    """One entry per commit: ``abc1234 2026-11-30 Subject line``."""
    starts = [m for m in _FULL.finditer(text)]
    if starts:
        found = []
        for k, m in enumerate(starts):
            end = starts[k + 1].start() if k + 1 < len(starts) else len(text)
            body = text[m.end() : end]
            subject = next((row.strip() for row in body.split("\n") if row.strip()), "")
            date = _DATE.search(m.group(0))
            when = _short_date(date.group(1)) if date else ""
            title = " ".join(part for part in (m.group(1)[:10], when, subject) if part)
            found.append(Found(title, "commit", 0, m.start(), end))
        return found
    found = []
    at = 0
    for row in text.split("\n"):
        oneline = _ONELINE.match(row)
        if oneline:
            title = f"{oneline.group(1)[:10]} {oneline.group(2).strip()}"
            found.append(Found(title, "commit", 0, at, at + len(row)))
        at += len(row) + 1
    return found


_ISO: Final = re.compile(r"\d{4}-\d\d-\d\d")
_GIT_DATE: Final = re.compile(r"(?:\w{3} )?(\w{3}) (\d{1,2}) [\d:]+ (\d{4})")
_MONTH_NAMES: Final = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_MONTHS: Final = {name: n for n, name in enumerate(_MONTH_NAMES, start=1)}


def _short_date(text: str) -> str:
    """A commit's date as YYYY-MM-DD, from git's default or ISO format; as written when it is neither."""
    iso = _ISO.search(text)
    if iso:
        return iso.group(0)
    git = _GIT_DATE.search(text)
    if git and git.group(1) in _MONTHS:
        return f"{git.group(3)}-{_MONTHS[git.group(1)]:02d}-{int(git.group(2)):02d}"
    return text.strip()[:25]
