"""The storage protocols the task memory dispatches to.

A storage keeps the payload of one artifact under `(namespace, item)`; the
memory's catalog keeps what the artifact was (kind, MIME type, its MCP fields).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from offprompt.artifacts import Artifact
from offprompt.tokens import TokenIndex

#: How `query` ranks: by meaning and words together, by meaning (embeddings) only, or by words (BM25) only.
SearchMode = Literal["hybrid", "dense", "lexical"]


@dataclass(frozen=True, slots=True)
class StoredItem:
    """What storing one artifact took: its size in tokens (0 for binaries) and bytes."""

    tokens: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Window:
    """One token window of a stored text."""

    text: str
    offset: int
    next_offset: int | None
    total_tokens: int


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk that matched a query; `offset` is its first token, for `memory_load`."""

    namespace: str
    item: int
    offset: int
    score: float
    text: str


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

    def store(self, namespace: str, item: int, artifact: Artifact, *, searchable: bool = True) -> StoredItem: ...

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window: ...

    def token_index(self, namespace: str, item: int) -> TokenIndex:
        """Where each token of the stored text starts, in bytes."""
        ...

    def query(
        self,
        query: str,
        namespaces: Collection[str] | None,
        top_k: int,
        mode: SearchMode = "hybrid",
    ) -> list[Hit]: ...

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

    def close(self) -> None: ...
