"""An outline as the model reads it: one line per entry, indented by depth, bounded in tokens."""

from __future__ import annotations

import re
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


def bounded(entries: Sequence[Entry], max_tokens: int) -> tuple[list[str], list[Entry]]:
    """The outline lines that fit in ``max_tokens``, in document order, and the entries left out.

    Entries are chosen by importance, not by place: shallow before deep, public before private (`_name`), large
    before small. Every top-level entry is named: those whose full line does not fit are listed by name and
    line on one compact line at the end (as many as fit), so a module's map never stops before its main class;
    not paragraphs, whose names would only be their first words."""
    rendered = lines(entries)
    costs = [count_tokens(line) + 1 for line in rendered]
    names = [f"{_name(e.title)} L{e.line}" for e in entries]
    name_costs = [count_tokens(name) + 1 for name in names]
    order = sorted(range(len(entries)), key=lambda k: _importance(entries[k], k))
    # The line that says the text has records (how many, their fields, a jq line) comes first and whole: it is
    # what tells the model it can count instead of reading, and named it would be cut to a few words.
    kept = {k for k, e in enumerate(entries) if e.kind == _RECORDS and costs[k] <= max_tokens}
    used = sum(costs[k] for k in kept)
    order = [k for k in order if k not in kept]
    top = {k for k, e in enumerate(entries) if e.depth == 0 and e.kind not in _UNNAMED} - kept
    named_cost = sum(name_costs[k] for k in top) + _NAMES_HEAD_TOKENS if top else 0
    for k in order:
        # Room for this line, and for the names of the top-level entries still without one.
        rest = named_cost - (name_costs[k] if k in top else 0)
        if used + costs[k] + (rest if rest > _NAMES_HEAD_TOKENS else 0) <= max_tokens:
            kept.add(k)
            used += costs[k]
            named_cost = rest
    shown = [rendered[k] for k in sorted(kept)]
    unnamed = [k for k in sorted(top - kept)]
    listed: list[int] = []
    budget = max_tokens - used - _NAMES_HEAD_TOKENS
    for k in unnamed:
        if name_costs[k] > budget:
            break
        listed.append(k)
        budget -= name_costs[k]
    if listed:
        shown.append(f"{_NAMES_HEAD} {', '.join(names[k] for k in listed)}")
    left = [entries[k] for k in range(len(entries)) if k not in kept and k not in listed]
    return shown, left


_NAMES_HEAD = "Also at top level:"
#: The kind of the entry that says a text's records exist (memory/records' summary).
_RECORDS = "records"
#: Entries titled by their first words, not by a name: listed by name they say nothing.
_UNNAMED = frozenset({"paragraph", "section"})
#: The head's tokens and its separator (6), written out: counting them at import would load the tokenizer tables
#: (~80 MB) in every process that imports the outline, before anything needs counting.
_NAMES_HEAD_TOKENS = 6
_NAME = re.compile(r"^(?:async\s+)?(?:def|class|function\*?|const|let|var|interface|type|enum)\s+([\w$.]+)")


def _name(title: str) -> str:
    """An entry's name: the identifier a definition introduces, else its title up to the first dash or colon."""
    found = _NAME.match(title.strip())
    if found:
        return found.group(1)
    return title.split(" — ")[0].strip().rstrip(":")[:60]


def _importance(entry: Entry, k: int) -> tuple[int, bool, bool, int, int]:
    """Sort key, most important first: depth, named before paragraphs, private after public, larger first,
    then document order."""
    return (
        entry.depth,
        entry.kind in _UNNAMED,
        _name(entry.title).startswith("_"),
        -(entry.end_line - entry.line),
        k,
    )


def left_out(entries: Sequence[Entry]) -> str:
    """What an outline left out, exactly: "143 more entries (120 methods, 23 functions)"."""
    kinds = Counter(e.kind for e in entries)
    parts = ", ".join(f"{n:,} {_plural(kind, n)}" for kind, n in kinds.most_common())
    return f"{len(entries):,} more {'entry' if len(entries) == 1 else 'entries'} ({parts})"


def _plural(kind: str, n: int) -> str:
    if n == 1:
        return kind
    return kind[:-1] + "ies" if kind.endswith("y") else kind + ("es" if kind.endswith(("s", "x")) else "s")


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
