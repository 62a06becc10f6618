"""The passages a query's answer shows: no line twice, and the whole held to a budget of tokens.

A text's chunks overlap their neighbours by design, and the words' first window overlaps a chunk: ranked one
by one, two of them often say the same lines. Shown as they rank, the default answer repeated a fifth of its
lines. Here the hits of one text that share bytes become one passage in the place of the better, and the next
hit takes the place freed; a passage past the first ones that a shown one holds whole is dropped. Then, when
the passages and the candidates' lines together pass the budget, the last passages are cut to the lines around
their best line (the one with most of the question's words), last first: a passage ranked fifth costs as much
as the first and holds the answer far less often.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Final

from offprompt.memory.storage.base import Hit

__all__ = [
    "ANSWER_TOKENS",
    "KEPT_AROUND",
    "LINE_CHARS",
    "best_row",
    "cut_to_best",
    "distinct",
    "holds",
    "within_budget",
]

#: What memory_query's default answer (5 passages, 10 candidates) may cost, in tokens; more asked for, more
#: allowed in proportion.
ANSWER_TOKENS: Final = 1500
#: A cut passage keeps this many lines each side of its best line.
KEPT_AROUND: Final = 2
#: Cut to its best line alone, a passage's line longer than this (a JSON string of kilobytes on one line) keeps
#: this many characters.
LINE_CHARS: Final = 600


def best_row(rows: Sequence[str], words: Collection[str]) -> int:
    """The row of a passage that holds most of the query's words (the first of equals): a candidate's line."""
    scores = [sum(1 for w in words if w in row.lower()) for row in rows]
    return max(range(len(rows)), key=lambda n: (scores[n], -n))


def _span(hit: Hit) -> tuple[int, int]:
    return hit.start, hit.start + len(hit.text.encode("utf-8"))


def _same_text(a: Hit, b: Hit) -> bool:
    return (a.namespace, a.item) == (b.namespace, b.item) and a.start >= 0 and b.start >= 0


def _overlap(a: Hit, b: Hit) -> int:
    if not _same_text(a, b):
        return 0
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return min(a1, b1) - max(a0, b0)


def holds(shown: Hit, hit: Hit) -> bool:
    """Whether `shown` holds every byte of `hit` (both of one text, their first bytes known)."""
    if not _same_text(shown, hit):
        return (shown.namespace, shown.item, shown.offset, shown.text) == (
            hit.namespace,
            hit.item,
            hit.offset,
            hit.text,
        )
    (s0, s1), (h0, h1) = _span(shown), _span(hit)
    return s0 <= h0 and h1 <= s1


def _union(kept: Hit, other: Hit) -> Hit:
    """One passage holding both (they share bytes), in `kept`'s place with the better score."""
    first, second = (kept, other) if kept.start <= other.start else (other, kept)
    end = _span(first)[1]
    data = first.text.encode("utf-8")
    if _span(second)[1] > end:
        data += second.text.encode("utf-8")[end - second.start :]
    text = data.decode("utf-8", errors="replace")
    return replace(first, score=max(kept.score, other.score), text=text)


def distinct(hits: Sequence[Hit], top_k: int) -> tuple[list[Hit], list[Hit]]:
    """The first `top_k` passages, hits that share bytes with one joined into it, and the hits left (without
    those a shown passage holds whole), in rank order."""
    shown: list[Hit] = []
    rest: list[Hit] = []
    for hit in hits:
        if any(holds(s, hit) for s in shown):
            continue
        # Joined only while the passages are still being chosen: past them, an overlap is a candidate.
        at = next((k for k, s in enumerate(shown) if _overlap(s, hit) > 0), None) if len(shown) < top_k else None
        if at is not None:
            shown[at] = _union(shown[at], hit)
        elif len(shown) < top_k:
            shown.append(hit)
        else:
            rest.append(hit)
    return shown, rest


def cut_to_best(hit: Hit, words: Collection[str], around: int = KEPT_AROUND, line_chars: int | None = None) -> Hit:
    """`hit` cut to `around` lines each side of its best line, and each of those past `line_chars` (if given) to
    the characters around its best words (as is when no shorter)."""
    rows = hit.text.splitlines(keepends=True)
    if hit.line <= 0:
        return hit
    first = 0
    if len(rows) > 2 * around + 1:
        best = best_row([r.rstrip("\r\n") for r in rows], words)
        first = max(0, min(best - around, len(rows) - 2 * around - 1))
    kept = rows[first : first + 2 * around + 1]
    if line_chars is not None:
        kept = [_around_words(row, words, line_chars) for row in kept]
    if kept == rows:
        return hit
    skipped = len("".join(rows[:first]).encode("utf-8"))
    start = hit.start + skipped if hit.start >= 0 else hit.start
    return replace(hit, text="".join(kept), start=start, line=hit.line + first)


def _around_words(row: str, words: Collection[str], chars: int) -> str:
    """`row`, or when longer than `chars` (a JSON string of kilobytes on one line) the `chars` of it that hold
    most of the words, an ellipsis where it was cut."""
    end = row[len(row.rstrip("\r\n")) :]
    text = row[: len(row) - len(end)]
    if len(text) <= chars:
        return row
    low = text.lower()
    starts = [max(0, at - chars // 4) for w in words for at in _places(low, w)] or [0]
    best = max(starts, key=lambda a: (sum(1 for w in words if w in low[a : a + chars]), -a))
    best = min(best, len(text) - chars)
    cut = text[best : best + chars]
    return ("…" if best > 0 else "") + cut + ("…" if best + chars < len(text) else "") + end


def _places(text: str, word: str, most: int = 64) -> list[int]:
    """Where `word` is in `text`, its first `most` places."""
    found: list[int] = []
    at = text.find(word)
    while at >= 0 and len(found) < most:
        found.append(at)
        at = text.find(word, at + 1)
    return found


def within_budget(
    passages: list[Hit],
    words: Collection[str],
    budget: int,
    cost: Callable[[list[Hit]], int],
    around: int,
    line_chars: int | None = None,
) -> list[Hit]:
    """`passages` with the last ones cut to `around` lines each side of their best line, last first, until `cost`
    of them is within `budget` (the first passage is never cut)."""
    out = list(passages)
    for k in range(len(out) - 1, 0, -1):
        if cost(out) <= budget:
            break
        out[k] = cut_to_best(out[k], words, around, line_chars)
    return out
