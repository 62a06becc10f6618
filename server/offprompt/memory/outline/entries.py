"""An outline entry, as the cutters find it (character span) and as it is stored and handed out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: No outline holds more entries: the whole outline rides in a reference's `_meta`.
MAX_ENTRIES = 1500
MAX_TITLE_CHARS = 160


@dataclass(frozen=True, slots=True)
class Found:
    """What a cutter found: characters ``[start, end)`` of the text, titled."""

    title: str
    kind: str
    depth: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Entry:
    """One outline entry: ``line`` and ``end_line`` are 1-based and inclusive; ``offset`` is the token where
    the entry starts (a ``memory_load`` from it begins with the entry)."""

    title: str
    kind: str
    depth: int
    line: int
    end_line: int
    offset: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "kind": self.kind,
            "depth": self.depth,
            "line": self.line,
            "end_line": self.end_line,
            "offset": self.offset,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        return cls(
            str(data["title"]),
            str(data["kind"]),
            int(data["depth"]),
            int(data["line"]),
            int(data["end_line"]),
            int(data["offset"]),
        )


def title(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_words(text: str, words: int = 10, limit: int = 72) -> str:
    return title(" ".join(text.split()[:words]), limit)
