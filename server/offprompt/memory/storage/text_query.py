"""A query over stored texts' chunks, by meaning, by words or both: what both text storages answer with.

`TextSearch.query` ranks in one of three modes: `dense` (cosine similarity of the embeddings: finds
paraphrases), `lexical` (BM25 over words and identifiers) or `hybrid` (both scores, normalised, with coverage
and definitions: see :mod:`ranking`; BM25's first chunk, and its first window of characters
(:mod:`windows`), always among the first five). In `lexical` and
`hybrid`, a chunk that contains an identifier the query names (``ERR_CONN_RESET``, ``TimeoutExpired``, a path)
ranks above every chunk that doesn't, as grep would. The indexes are the storage's (`indexes.py`'s protocols);
the chunks' texts are read through its `LocalTexts`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Final, get_args

from offprompt.errors import (
    ConfigError,
    CredentialsRefusedError,
    IncompatibleStoreError,
    InvalidArgumentError,
    NotFoundError,
)
from offprompt.memory import chunking
from offprompt.memory.storage import ranking
from offprompt.memory.storage.base import Candidate, Hit, Ranking, SearchMode
from offprompt.memory.storage.coverage import coverage
from offprompt.memory.storage.fusion import LEXICAL_FIRST_WITHIN, joined, kept_within
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.lexical import ChunkRecord, identifiers
from offprompt.memory.storage.local_texts import LocalTexts, searchable

__all__ = ["CANDIDATES", "MODES", "PERMANENT_FAILURES", "TextSearch", "describe_failure"]

logger = logging.getLogger(__name__)

MODES: Final = get_args(SearchMode)
#: The dense index's answer: each chunk found, its similarity and its text.
_Nearest = list[tuple[ChunkRecord, float, str]]

#: Candidates each ranking contributes before fusion.
CANDIDATES: Final = 50
#: Queries whose searches by meaning run at once: anyio's worker threads, which serve the tool calls.
QUERIES_AT_ONCE: Final = 40
#: How long a scoped query waits for just-stored text to reach the lexical index.
CHUNKING_WAIT_SECONDS: Final = 0.5  # then the task memory ranks what is still unchunked on the spot
#: Failures that retrying won't mend: the configuration is wrong.
PERMANENT_FAILURES: Final = (ConfigError, IncompatibleStoreError)


def describe_failure(exc: BaseException) -> str:
    """An exception in one line, for the model and the log: its type and the start of its message."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message[:200]}" if message else type(exc).__name__


class TextSearch:
    """Queries over a storage's two indexes, the chunks' texts read from its `texts`.

    `wait_chunked(namespaces, seconds)` waits for just-stored texts to reach the lexical index (the storage
    knows who chunks them); `dense_answered()` is told each time the dense index answered, so an embedder
    backing off from an outage can go on at once. A `readonly` search (the command line beside a server)
    ranks by words only.
    """

    def __init__(
        self,
        lexical: LexicalIndex,
        dense: DenseIndex,
        texts: LocalTexts,
        wait_chunked: Callable[[Collection[str] | None, float], bool],
        dense_answered: Callable[[], None] = lambda: None,
        *,
        readonly: bool = False,
    ) -> None:
        self._lexical = lexical
        self._dense = dense
        self._texts = texts
        self._wait_chunked = wait_chunked
        self._dense_answered = dense_answered
        self._readonly = readonly
        #: A hybrid query's search by meaning (the query's embedding, then the nearest chunks) runs here beside
        #: its search by words: both wait mostly on native code that lets go of the GIL (ONNX, the vector index,
        #: SQLite), so the query costs the slower of the two rather than their sum. As many workers as queries
        #: served at once (made when needed, by a serving thread, so at its priority): a query never waits for
        #: another's search by meaning, as none did when each searched on its own thread.
        self._beside = ThreadPoolExecutor(max_workers=QUERIES_AT_ONCE, thread_name_prefix="query-by-meaning")

    def query(
        self,
        query: str,
        namespaces: Collection[str] | None,
        top_k: int,
        mode: SearchMode = "hybrid",
        *,
        wait: bool = True,
    ) -> Ranking:
        """The `top_k` chunks that best answer `query` in `mode`, best first. With `wait`, first wait briefly
        for these namespaces to reach the lexical index. With the dense index unreachable, `dense` and `hybrid`
        rank by words and say why."""
        self._check(query, top_k, mode)
        if namespaces is not None and not namespaces:
            return Ranking([])
        depth = max(CANDIDATES, 2 * top_k)
        candidates: dict[str, Candidate] = {}
        names: list[str] = []
        by_meaning: Future[tuple[Sequence[float], _Nearest]] | None = None
        if mode != "lexical":
            by_meaning = self._beside.submit(self._by_meaning, query, namespaces, depth)
        if mode != "dense":
            names = self._by_words(query, namespaces, depth, candidates, wait)
        vector: Sequence[float] | None = None
        unavailable = ""
        if by_meaning is not None:
            try:
                vector, nearest = by_meaning.result()
            except Exception as exc:  # any client's, any model's failure: answer by words rather than not at all
                if isinstance(exc, PERMANENT_FAILURES) and not isinstance(exc, CredentialsRefusedError):
                    raise
                unavailable = str(exc) if isinstance(exc, CredentialsRefusedError) else describe_failure(exc)
                logger.warning("search by meaning failed, answering by words: %s", unavailable)
                vector = None
                if mode == "dense":
                    names = self._by_words(query, namespaces, depth, candidates, wait)
                mode = "lexical"
            else:
                _collect(candidates, "dense", [(r, score) for r, score, _ in nearest], [doc for _, _, doc in nearest])
                self._dense_answered()

        found = self._scored(query, vector, candidates, names, mode)
        best = sorted(found, key=lambda c: (c.named, c.score), reverse=True)[:top_k]
        first = _words_first(found) if mode == "hybrid" else None
        shown = self._texts.widened_hits([*map(_hit, best), *([first] if first else [])])  # one pass over the files
        hits, kept = shown[: len(best)], (shown[-1] if first else None)
        if mode != "hybrid":
            return Ranking(hits, by_words=unavailable)
        window = self._words_window(query, namespaces)
        if window is not None and hits:  # in the place of a passage it ranks as well as
            window = replace(window, score=min(h.score for h in hits[:LEXICAL_FIRST_WITHIN]))
        if top_k >= LEXICAL_FIRST_WITHIN:  # fewer asked for: the fused best, as asked
            hits = kept_within(joined(hits, window), kept, window)
        return Ranking(hits, by_words=unavailable, lexical_first=kept, lexical_window=window)

    def _by_meaning(
        self, query: str, namespaces: Collection[str] | None, depth: int
    ) -> tuple[Sequence[float], _Nearest]:
        """The query's embedding, and the `depth` chunks nearest to it."""
        vector = self._dense.embed_query(chunking.for_embedding(query))
        return vector, self._dense.search(vector, namespaces, depth)

    def close(self) -> None:
        self._beside.shutdown(wait=False)

    def _words_window(self, query: str, namespaces: Collection[str] | None) -> Hit | None:
        """The window of characters plain BM25 ranks first (`windows.py`), widened to whole lines, as a passage."""
        found = self._lexical.search_windows(query, namespaces, 1)
        if not found:
            return None
        best = found[0]
        try:
            start, text = self._texts.span(best.namespace, best.item, best.start, best.end)
            offset = self._texts.token_index(best.namespace, best.item).token_at(start)
        except NotFoundError:
            return None  # deleted since
        return Hit(best.namespace, best.item, offset, 0.0, text, start)

    def _check(self, query: str, top_k: int, mode: SearchMode) -> None:
        """Refuse a query this search cannot answer, saying what to ask instead."""
        if top_k <= 0:
            raise InvalidArgumentError(f"top_k must be at least 1, not {top_k}")
        if not query.strip():
            raise InvalidArgumentError("query is empty: say what you are looking for")
        if mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if self._readonly and mode != "lexical":
            raise InvalidArgumentError("a read-only view of a memory searches by words only: use mode lexical")

    def _scored(
        self,
        query: str,
        vector: Sequence[float] | None,
        candidates: dict[str, Candidate],
        names: list[str],
        mode: SearchMode,
    ) -> list[Candidate]:
        """The candidates with their texts read, each scored for `mode` (hybrid: fused from its features)."""
        self._texts.read_candidates(candidates)
        found = [c for c in candidates.values() if c.text]
        for c in found:
            # Exact and case-sensitive, as grep matches: "JavaScript" in a question is not "libjavascriptcore".
            c.named = sum(1 for name in names if name in c.text or name in c.record.context)
        if mode == "hybrid":
            self._complete(query, vector, found)
            shares = coverage(query, [searchable(c.record.context, c.text) for c in found])
            for c, share in zip(found, shares, strict=True):
                c.coverage = share
            ranking.fuse(query, found)
        else:
            for c in found:
                c.score = c.scores.get(mode, 0.0)
        return found

    def _by_words(
        self,
        query: str,
        namespaces: Collection[str] | None,
        depth: int,
        candidates: dict[str, Candidate],
        wait: bool,
    ) -> list[str]:
        """Collect the lexical index's candidates; the identifiers the query names."""
        if wait:
            self._wait_chunked(namespaces, CHUNKING_WAIT_SECONDS)
        _collect(candidates, "lexical", [(h.record, h.score) for h in self._lexical.search(query, namespaces, depth)])
        names = identifiers(query)
        if names:
            # Chunks naming the identifiers, even where the query's other words would not rank them high.
            named = self._lexical.search(query, namespaces, depth, require_any=names)
            _collect(candidates, "lexical", [(h.record, h.score) for h in named])
        return names

    def _complete(self, query: str, vector: Sequence[float] | None, found: Sequence[Candidate]) -> None:
        """Give each candidate both scores: BM25 to those found by meaning, similarity to those found by words."""
        lexical = self._lexical.scores(query, [c.record for c in found if "lexical" not in c.scores])
        missing = [c.record for c in found if "dense" not in c.scores]
        try:
            dense = self._dense.similarities(vector, missing) if vector is not None else {}
        except PERMANENT_FAILURES:
            raise
        except Exception as exc:  # gone since the search a moment ago: these rank by their words
            logger.warning("similarities of the chunks found by words failed: %s", describe_failure(exc))
            # Embedded, yet not among the chunks nearest the query: no more similar than the least of those.
            floor = min((c.scores["dense"] for c in found if "dense" in c.scores), default=None)
            dense = {r.id: floor for r in missing} if floor is not None else {}
        for c in found:
            c.scores.setdefault("lexical", lexical.get(c.record.id, 0.0))
            if c.record.id in dense:
                c.scores["dense"] = dense[c.record.id]


def _words_first(found: Sequence[Candidate]) -> Hit | None:
    """The candidate BM25 ranks first, which stays in sight: fusion may rank it low (few words, none alike in
    meaning), and it is often the very line asked for (an option's name, a definition)."""
    best = max(found, key=lambda c: c.scores.get("lexical", 0.0), default=None)
    return _hit(best) if best is not None and best.scores.get("lexical", 0.0) > 0 else None


def _hit(c: Candidate) -> Hit:
    return Hit(c.record.namespace, c.record.item, c.record.offset, round(c.score, 4), c.text, c.record.start)


def _collect(
    candidates: dict[str, Candidate],
    name: str,
    ranked: Sequence[tuple[ChunkRecord, float]],
    documents: Sequence[str] = (),
) -> None:
    for k, (record, score) in enumerate(ranked):
        found = candidates.setdefault(record.id, Candidate(record))
        found.scores[name] = score
        if record.start < 0 and k < len(documents):
            # A vector written without a span (by an earlier version, until it is re-embedded): the document
            # stored with it is its text.
            found.text = documents[k]
