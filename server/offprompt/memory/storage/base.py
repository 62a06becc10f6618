"""The storage protocols the task memory dispatches to.

A storage keeps the payload of one artifact under `(namespace, item)`; the
memory's catalog keeps what the artifact was (kind, MIME type, its MCP fields).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from offprompt.artifacts import Artifact
from offprompt.memory.outline import Entry, LineIndex
from offprompt.memory.records import Summary
from offprompt.tokens import TokenIndex

if TYPE_CHECKING:
    from offprompt.memory.storage.lexical import ChunkRecord

#: How `query` ranks: by meaning and words together, by meaning (embeddings) only, or by words (BM25) only.
SearchMode = Literal["hybrid", "dense", "lexical"]


@dataclass(frozen=True, slots=True)
class StoredItem:
    """What storing one artifact took: its size in tokens (0 for binaries) and bytes, and the outline when it
    was made then (None: made later, read with `TextStorage.outline`)."""

    tokens: int
    bytes: int
    outline: tuple[Entry, ...] | None = None


@dataclass(slots=True)
class IndexState:
    """A namespace's indexing: its searchable items, how many are chunked, their chunks, and those embedded."""

    items: int = 0
    chunked_items: int = 0
    chunks: int = 0
    embedded_chunks: int = 0


@dataclass(frozen=True, slots=True)
class Window:
    """One token window of a stored text, and the lines it covers: ``line`` holds its first byte, ``end_line``
    its last; ``next_line`` starts right where it ends (None when it ends inside a line or at the end)."""

    text: str
    offset: int
    next_offset: int | None
    total_tokens: int
    line: int = 1
    end_line: int = 1
    next_line: int | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk that matched a query; `offset` is its first token, for `memory_load`; `start` its first byte
    (-1: not known) and `line` the line that holds it (0: not known yet)."""

    namespace: str
    item: int
    offset: int
    score: float
    text: str
    start: int = -1
    line: int = 0


@dataclass(frozen=True, slots=True)
class Ranking:
    """What a query found, and whether it could rank the way it was asked to."""

    hits: list[Hit]
    #: Why the chunks are ranked by their words only though meaning was asked for (the dense index or its
    #: embedding function unreachable); "" when they are ranked as asked.
    by_words: str = ""
    #: A hybrid ranking's best chunk by words alone (BM25's first), which `hits` keep among their first five.
    lexical_first: Hit | None = None
    #: Its best window of characters by plain BM25 (`windows.py`), widened to whole lines, which `hits` keep
    #: among their first five too unless one of those holds it.
    lexical_window: Hit | None = None


@dataclass(frozen=True, slots=True)
class LineMatch:
    namespace: str
    item: int
    line: int
    offset: int
    text: str


class Storage(Protocol):
    """Keeps artifact payloads by namespace and item."""

    def store(self, namespace: str, item: int, artifact: Artifact) -> StoredItem: ...

    def load(self, namespace: str, item: int) -> bytes: ...

    def delete(self, namespace: str) -> None: ...

    def namespaces(self) -> set[str]: ...


class BlobStorage(Storage, Protocol):
    """Binary payloads: images, audio, embedded blobs."""


class TextStorage(Storage, Protocol):
    """Text payloads, readable by token window and searchable."""

    def store(
        self, namespace: str, item: int, artifact: Artifact, *, searchable: bool = True, with_outline: bool = True
    ) -> StoredItem:
        """Keep the text; `with_outline`: make its outline now (else the indexer makes it, or the first read of it)."""
        ...

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window: ...

    def window_at_line(self, namespace: str, item: int, line: int, max_tokens: int) -> Window:
        """Up to ``max_tokens`` from the start of the 1-based ``line``, ending at a line break where one is in
        reach."""
        ...

    def outline(self, namespace: str, item: int) -> list[Entry]:
        """The item's outline, made when it was stored (or now, for an item stored without one)."""
        ...

    def records(self, namespace: str, item: int, *, make: bool = True) -> Summary | None:
        """The summary of a table's or a log's records (made now if need be, unless not to `make` them); None for
        a text with none."""
        ...

    def records_written(self) -> int | None:
        """How many records summaries this process wrote or dropped; None when others may write them too."""
        ...

    def records_data(self, namespace: str, item: int) -> bytes | None:
        """The text's records as a JSON array; None if it has none or they were over their cap."""
        ...

    def lines(self, namespace: str, item: int) -> LineIndex: ...

    def token_index(self, namespace: str, item: int) -> TokenIndex: ...

    def query(
        self,
        query: str,
        namespaces: Collection[str] | None,
        top_k: int,
        mode: SearchMode = "hybrid",
        *,
        wait: bool = True,
    ) -> Ranking:
        """The best chunks; with `wait`, first a short wait for these namespaces to reach the lexical index."""
        ...

    def grep(
        self, pattern: str, namespaces: Sequence[tuple[str, int]], max_matches: int
    ) -> tuple[list[LineMatch], bool]: ...

    def reclaim(self) -> None:
        """Give back what deletes freed in its indexes, as far as they allow."""
        ...

    def index_bytes(self) -> int:
        """What its search indexes occupy on disk (0 where they live elsewhere, e.g. a Chroma server)."""
        ...

    def pending(self, mode: SearchMode = "hybrid") -> set[str]:
        """Namespaces whose chunks are not all searchable yet in that mode."""
        ...

    def index_state(self) -> dict[str, IndexState]:
        """How far indexing has got per namespace, as it is on disk."""
        ...

    def backlog(self) -> tuple[int, int]:
        """Items this process still has to chunk, and to embed."""
        ...

    def close(self, wait: float = 10) -> None:
        """Stop indexing (after the batch under way, waiting at most `wait` seconds: what is left resumes at the
        next open) and close."""
        ...


@dataclass(slots=True)
class Candidate:
    """A chunk one of the rankings found, with what fusion needs to know of it."""

    record: ChunkRecord
    scores: dict[str, float] = field(default_factory=dict)  # "lexical": BM25, "dense": cosine similarity
    text: str = ""
    named: int = 0  # how many of the query's identifiers it contains
    coverage: float = 0.0  # the IDF-weighted share of the query's words it holds
    score: float = 0.0
