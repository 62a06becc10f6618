"""The dense index of a shared memory without a Chroma server: none, so it searches by words only."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final

from offprompt.errors import InvalidArgumentError
from offprompt.memory.storage.lexical import ChunkRecord


class NoDenseIndex:
    """No vector store: a shared memory without a Chroma server searches by words only."""

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        raise InvalidArgumentError(NO_VECTORS)

    def embed_query(self, text: str) -> Sequence[float]:
        raise InvalidArgumentError(NO_VECTORS)

    def upsert(self, records: Sequence[ChunkRecord], documents: Sequence[str], vectors: Sequence[Any]) -> None:
        raise InvalidArgumentError(NO_VECTORS)

    def search(
        self, vector: Sequence[float], namespaces: Collection[str] | None, limit: int
    ) -> list[tuple[ChunkRecord, float, str]]:
        return []

    def similarities(self, vector: Sequence[float], records: Sequence[ChunkRecord]) -> dict[str, float]:
        return {}

    def delete(self, namespace: str) -> None:
        pass

    def delete_item(self, namespace: str, item: int) -> None:
        pass

    def check(self) -> None:
        raise InvalidArgumentError(NO_VECTORS)

    def disk_bytes(self) -> int:
        return 0


NO_VECTORS: Final = (
    'this shared memory keeps no vectors (set "chroma": {"mode": "http", "url": ...} beside "postgres" '
    "in the offprompt block for search by meaning): use mode lexical or hybrid"
)
