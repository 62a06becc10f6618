"""Several rankings of the same chunks fused into one: reciprocal rank fusion.

Used when `memory_query` gets several phrasings of one need (`queries`). Ranks fuse where scores would not:
each query's scores are on their own scale (BM25 grows with the query's length), while a chunk that several
phrasings rank high is what all of them mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from offprompt.memory.storage.base import Hit

__all__ = ["LEXICAL_FIRST_WITHIN", "RRF_K", "joined", "keeping_words_first", "kept_within", "reciprocal_rank_fusion"]

#: The usual constant of reciprocal rank fusion: rank 1 counts 1/61, rank 10 about 1/70; no list dominates.
RRF_K: Final = 60
#: The words' best passage (BM25's first) is always among this many first passages of a fused ranking of at least
#: as many: what words alone find, a question naming a rare option or a definition, is never lost to passages that
#: only mean alike.
LEXICAL_FIRST_WITHIN: Final = 5


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hit]], top_k: int) -> list[Hit]:
    """The `top_k` chunks by the sum of ``1 / (RRF_K + rank)`` over the rankings they are in, best first.

    A chunk is its namespace, item and first token; its score becomes the fused score, scaled so that a chunk
    first in every ranking scores 1.
    """
    fused: dict[tuple[str, int, int], float] = {}
    first: dict[tuple[str, int, int], Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.namespace, hit.item, hit.offset)
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    best = max(len(rankings), 1) / (RRF_K + 1)
    order = sorted(fused, key=lambda key: fused[key], reverse=True)[:top_k]
    return [
        Hit(h.namespace, h.item, h.offset, round(fused[key] / best, 4), h.text, h.start)
        for key, h in ((key, first[key]) for key in order)
    ]


def kept_within(hits: Sequence[Hit], *kept: Hit | None, within: int = LEXICAL_FIRST_WITHIN) -> list[Hit]:
    """`hits` with each of `kept` among their first `within` (moved up to the last of those places, or put there
    when the ranking dropped it; the first of `kept` before the second): the others keep their order. Hits are the
    same chunk when namespace, item and first token are; a kept passage that one of the first `within` holds
    whole is not shown again."""
    out = list(hits)
    if within <= 0:
        return out
    shown = out[:within]
    wanted = [
        k
        for k in kept
        if k is not None and _key(k) not in {_key(h) for h in shown} and not any(_holds(h, k) for h in shown)
    ]
    for n, keep in enumerate(wanted):
        at = next((k for k, h in enumerate(out) if _key(h) == _key(keep)), None)
        # The places after this one's are left for those still to come.
        place = max(min(within - (len(wanted) - 1 - n), len(out) + (1 if at is None else 0)) - 1, 0)
        if at is not None and at <= place:
            continue
        if at is not None:
            keep = out.pop(at)
        elif len(out) >= within:
            out.pop()  # the list keeps its length: the last one goes
        out.insert(place, keep)
    return out


def joined(hits: Sequence[Hit], passage: Hit | None, within: int = LEXICAL_FIRST_WITHIN) -> list[Hit]:
    """`hits` with the one of their first `within` that `passage` overlaps most (of one text, first bytes known)
    grown to hold both, in its place: the passage is then shown without a place of its own, and nothing shown is
    lost. As they are when it overlaps none (or one holds it whole)."""
    out = list(hits)
    if passage is None or passage.start < 0:
        return out
    span = _span(passage)
    overlaps = [
        (min(span[1], _span(h)[1]) - max(span[0], _span(h)[0]), k)
        for k, h in enumerate(out[:within])
        if (h.namespace, h.item) == (passage.namespace, passage.item) and h.start >= 0
    ]
    most, at = max(overlaps, default=(0, -1))
    if most <= 0 or _holds(out[at], passage):
        return out
    shown = out[at]
    first, second = (shown, passage) if shown.start <= passage.start else (passage, shown)
    head = first.text.encode()
    tail = second.text.encode()[max(0, _span(first)[1] - second.start) :]
    text = (head + tail).decode("utf-8", errors="replace") if _span(second)[1] > _span(first)[1] else first.text
    out[at] = Hit(shown.namespace, shown.item, first.offset, shown.score, text, first.start)
    return out


def keeping_words_first(hits: list[Hit], words_first: tuple[Hit | None, Hit | None], top_k: int) -> list[Hit]:
    """`hits` keeping the words' first chunk and window (`kept_within`, the window `joined` to a passage it
    overlaps) when five or more are asked for."""
    if top_k < LEXICAL_FIRST_WITHIN:
        return hits
    chunk, window = words_first
    return kept_within(joined(hits, window), chunk, window)


def _span(hit: Hit) -> tuple[int, int]:
    return hit.start, hit.start + len(hit.text.encode())


def _key(hit: Hit) -> tuple[str, int, int]:
    return hit.namespace, hit.item, hit.offset


def _holds(shown: Hit, passage: Hit) -> bool:
    """Whether `shown` holds the whole of `passage` (both of one text, their first bytes known)."""
    if (shown.namespace, shown.item) != (passage.namespace, passage.item) or shown.start < 0 or passage.start < 0:
        return False
    return shown.start <= passage.start and passage.start + len(passage.text.encode()) <= shown.start + len(
        shown.text.encode()
    )
