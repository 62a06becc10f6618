"""A query's answer read from the text storage: its hits with the line each starts in, the texts not yet in the
lexical index ranked on the spot by their words, and the passages of a stored result that answer its intent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from offprompt.artifacts import TEXT_KINDS
from offprompt.errors import NotFoundError
from offprompt.memory.catalog import BINARY, DUPLICATE_OF, CatalogStore
from offprompt.memory.outline import LineIndex, passages
from offprompt.memory.outline.passages import Passage
from offprompt.memory.storage.base import Hit, TextStorage

#: The intent's passages in a reference: how many, and how many tokens they hold together.
INTENT_PASSAGES = 3
INTENT_TOKENS = 600
#: A query about texts not yet in the lexical index ranks at most this many of their bytes on the spot, in
#: windows of about this many tokens (a chunk's size).
SPOT_BYTES = 8 * 1024 * 1024
SPOT_PASSAGE_TOKENS = 300


@dataclass(frozen=True, slots=True)
class Answer:
    """A query's hits; the namespaces in scope not yet searchable in the mode asked for; and, when the search by
    meaning was unreachable, why the hits are ranked by their words only."""

    hits: list[Hit]
    indexing: list[str]
    by_words: str = ""
    #: Of `indexing`, those not even searchable by their words yet.
    unchunked: list[str] = field(default_factory=list)
    #: The sensitive outputs a query across the memory left out (an `always` tool's: read only when named).
    left_out: list[str] = field(default_factory=list)


def intent_passages(text: TextStorage, namespace: str, texts: Sequence[int], intent: str) -> list[tuple[int, Passage]]:
    """The best passages for ``intent`` over the namespace's texts, read straight from the stored text:
    the indexes are still being built."""
    found: list[tuple[int, Passage]] = []
    per_passage = INTENT_TOKENS // INTENT_PASSAGES
    for position in texts:
        found += [(position, p) for p in best_passages(text, namespace, position, intent, INTENT_PASSAGES, per_passage)]
    found.sort(key=lambda x: -x[1].score)
    return found[:INTENT_PASSAGES]


def best_passages(text: TextStorage, namespace: str, item: int, query: str, top: int, max_tokens: int) -> list[Passage]:
    """The best passages of one stored text for `query`'s words, read straight from the stored text."""
    data = text.load(namespace, item)
    return passages.best(data, query, text.token_index(namespace, item), LineIndex.of(data), top, max_tokens)


def on_the_spot(
    text: TextStorage, catalog: CatalogStore, query: str, namespaces: Sequence[str], top_k: int
) -> list[Hit]:
    """The best windows of these namespaces' stored texts for `query`'s words (BM25 over overlapping windows,
    read straight from the stored text), best first; at most SPOT_BYTES of text are read."""
    found: list[Hit] = []
    budget = SPOT_BYTES
    records = [r for r in (catalog.get(ns) for ns in namespaces) if r is not None]  # deleted meanwhile
    for record in sorted(records, key=lambda r: -r.created):  # the newest first: its reference just went out
        for item in record.items:
            if item.kind not in TEXT_KINDS or DUPLICATE_OF in item.meta or BINARY in item.meta or not item.tokens:
                continue
            if item.bytes > budget:
                continue  # a smaller text may still fit
            budget -= item.bytes
            try:
                best = best_passages(text, record.namespace, item.item, query, top_k, SPOT_PASSAGE_TOKENS)
            except NotFoundError:
                continue  # deleted while this query ran
            found += [Hit(record.namespace, item.item, p.offset, p.score, p.text, p.start, p.line) for p in best]
    return sorted(found, key=lambda h: -h.score)


def with_lines(text: TextStorage, hits: list[Hit]) -> list[Hit]:
    """Hits with the first byte and the line each starts in (one read of each text that has hits)."""
    lines: dict[tuple[str, int], LineIndex] = {}
    out = []
    for hit in hits:
        key = (hit.namespace, hit.item)
        try:
            index = lines.get(key) or lines.setdefault(key, text.lines(*key))
        except NotFoundError:
            out.append(hit)  # deleted meanwhile
            continue
        start = hit.start if hit.start >= 0 else int(text.token_index(*key).offsets[hit.offset])
        out.append(replace(hit, start=start, line=index.line_at(start)))
    return out
