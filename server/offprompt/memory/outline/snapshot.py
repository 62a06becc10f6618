"""Accessibility snapshots (chrome-devtools-mcp's `take_snapshot`, Playwright's): headings, landmarks, tables.

A snapshot is one line per node, `uid=1_9 heading "Abstract" level="1"`, indented by its depth in the tree. A
page of a few hundred links reads to the log outline as repeated templates; what the model wants of it is the
page's map: its landmarks (banner, navigation, main, …), its headings by level, and its tables and forms, each
with the line to load (its `uid` is there to act on it).
"""

from __future__ import annotations

import re
from typing import Final

from offprompt.memory.outline.entries import Found

_NODE: Final = re.compile(
    r'^[ \t]*uid=(?P<uid>\S+) (?P<role>[A-Za-z]+)(?: "(?P<name>[^"\n]*)")?(?P<rest>[^\n]*)$', re.M
)
_ANY_NODE: Final = re.compile(r"^[ \t]*uid=\S+ ")
_LEVEL: Final = re.compile(r'\blevel="(\d)"')
_LANDMARKS: Final = frozenset(
    {"banner", "navigation", "main", "contentinfo", "complementary", "region", "search", "form", "dialog"}
)
_TABLES: Final = frozenset({"table", "grid", "treegrid"})
#: Lines looked at to decide whether a text is a snapshot.
_SNIFF: Final = 40


def looks_like(text: str) -> bool:
    rows = [row for row in text[:20_000].split("\n")[:_SNIFF] if row.strip()]
    return len(rows) >= 3 and sum(1 for row in rows if _ANY_NODE.match(row)) >= 0.6 * len(rows)


def outline(text: str) -> list[Found]:
    marks: list[tuple[int, str, str, int]] = []  # (start, title, kind, depth)
    for node in _NODE.finditer(text):
        role, name = node.group("role"), node.group("name")
        named = f' "{name}"' if name else ""
        if role == "heading":
            level = _LEVEL.search(node.group("rest"))
            depth = int(level.group(1)) if level else 2
            marks.append((node.start(), f"heading{named} (h{depth}) uid={node.group('uid')}", "heading", depth))
        elif role in _LANDMARKS:
            marks.append((node.start(), f"{role}{named} uid={node.group('uid')}", "landmark", 0))
        elif role in _TABLES:
            marks.append((node.start(), f"{role}{named} uid={node.group('uid')}", "table", 7))
    found = []
    for k, (start, title, kind, depth) in enumerate(marks):
        end = next((s for s, _, _, d in marks[k + 1 :] if d <= depth), len(text))
        found.append(Found(title, kind, min(depth, 6), start, end))
    return found
