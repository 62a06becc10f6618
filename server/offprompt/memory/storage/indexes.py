"""The two search indexes a text storage keeps over its chunks, as protocols a new backend implements.

`SqliteLexicalIndex` (lexical.py, FTS5 BM25) and `ChromaDenseIndex` (dense.py, any Chroma client) are the
implementations here; a shared backend for a team is one more of each.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from offprompt.memory.storage.lexical import ChunkRecord, LexicalHit, WindowHit


class LexicalIndex(Protocol):
    """Chunks and their words, ranked by BM25 or the like; ready within a second of a store."""

    def add(
        self, namespace: str, item: int, chunks: Sequence[ChunkRecord], texts: Sequence[str], titles: Sequence[str]
    ) -> None: ...

    def add_windows(self, namespace: str, item: int, spans: Sequence[tuple[int, int]], texts: Sequence[str]) -> None:
        """Index an item's windows of characters (`windows.py`), replacing any earlier ones."""
        ...

    def search_windows(self, query: str, namespaces: Collection[str] | None, limit: int) -> list[WindowHit]:
        """The windows that best match `query` by plain BM25, best first."""
        ...

    def indexed(self) -> set[tuple[str, int]]:
        """The (namespace, item) pairs whose chunks are all in."""
        ...

    def windowed(self) -> set[tuple[str, int]]:
        """The (namespace, item) pairs whose windows are in (or that need none)."""
        ...

    def chunks(self, namespace: str, item: int) -> list[ChunkRecord]: ...

    def count(self, namespace: str, item: int) -> int:
        """How many chunks the item has in the index."""
        ...

    def chunk_counts(self) -> dict[tuple[str, int], int]:
        """How many chunks each indexed (namespace, item) has."""
        ...

    def search(
        self,
        query: str,
        namespaces: Collection[str] | None,
        limit: int,
        *,
        require_any: Sequence[str] = (),
    ) -> list[LexicalHit]: ...

    def scores(self, query: str, records: Sequence[ChunkRecord]) -> dict[str, float]:
        """The score of each of `records` for `query`, by chunk id (0 where none of its words match)."""
        ...

    def delete(self, namespace: str) -> None: ...

    def namespaces(self) -> set[str]: ...

    def disk_bytes(self) -> int:
        """What it occupies on this machine's disk, counted against the memory's quota."""
        ...

    def reclaim(self) -> None:
        """After deletes: give back the space they freed, as far as the engine allows."""
        ...

    def close(self) -> None: ...


class DenseIndex(Protocol):
    """Chunk vectors and the embedding function that makes them; filled in the background."""

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]: ...

    def embed_query(self, text: str) -> Sequence[float]: ...

    def upsert(self, records: Sequence[ChunkRecord], documents: Sequence[str], vectors: Sequence[Any]) -> None: ...

    def search(
        self, vector: Sequence[float], namespaces: Collection[str] | None, limit: int
    ) -> list[tuple[ChunkRecord, float, str]]: ...

    def similarities(self, vector: Sequence[float], records: Sequence[ChunkRecord]) -> dict[str, float]: ...

    def delete(self, namespace: str) -> None: ...

    def delete_item(self, namespace: str, item: int) -> None: ...

    def check(self) -> None:
        """Raise if the index or its embedding function can't be used now (a server down, a model failing)."""
        ...

    def disk_bytes(self) -> int:
        """What it occupies on this machine's disk (0 for a server elsewhere), counted against the quota."""
        ...
