"""An outline as the model reads it: one line per entry, indented by depth, bounded in tokens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar

from offprompt.memory.outline.entries import Entry
from offprompt.tokens import count_tokens


class _Deep(Protocol):
    @property
    def depth(self) -> int: ...


T = TypeVar("T", bound=_Deep)


def shallow_first(entries: Sequence[T], count: int) -> list[T]:
    """``count`` entries, shallow ones before deep ones, in document order."""
    order = sorted(range(len(entries)), key=lambda k: (entries[k].depth, k))[:count]
    return [entries[k] for k in sorted(order)]


def lines(entries: Sequence[Entry]) -> list[str]:
    """One line per entry: ``L12-40 class Foo — What it does.``; where entries share a line (a text on one
    line), the token offset too."""
    shared = {line for line, n in Counter(e.line for e in entries).items() if n > 1}
    out = []
    for e in entries:
        where = f"L{e.line}" if e.end_line == e.line else f"L{e.line}-{e.end_line}"
        if e.line in shared and e.end_line == e.line:
            where += f" @{e.offset}"
        out.append(f"{'  ' * min(e.depth, 8)}{where} {e.title}")
    return out


def bounded(entries: Sequence[Entry], max_tokens: int) -> tuple[list[str], int]:
    """The lines of the entries that fit in ``max_tokens``, shallow ones first, shown in document order; and
    how many entries were left out."""
    rendered = lines(entries)
    order = sorted(range(len(entries)), key=lambda k: (entries[k].depth, k))
    kept: list[int] = []
    used = 0
    for k in order:
        cost = count_tokens(rendered[k]) + 1
        if used + cost > max_tokens:
            break
        kept.append(k)
        used += cost
    return [rendered[k] for k in sorted(kept)], len(entries) - len(kept)


def page(entries: Sequence[Entry], offset: int, max_tokens: int) -> tuple[list[str], int | None]:
    """Entries from index ``offset`` on, in document order, as many as fit in ``max_tokens`` (at least one);
    and the index to go on from (None at the end)."""
    rendered = lines(entries)
    used = 0
    end = offset
    while end < len(entries):
        cost = count_tokens(rendered[end]) + 1
        if end > offset and used + cost > max_tokens:
            break
        used += cost
        end += 1
    return rendered[offset:end], end if end < len(entries) else None
