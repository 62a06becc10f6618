"""Chunk vectors for large collections: real ones from the model, and pre-computed stand-ins.

Embedding 100k chunks would take over an hour here (about 20 chunks/s), so
collections past the first thousand chunks are filled with the real vectors
of real chunks plus a little Gaussian noise, renormalised, and inserted
directly. Every query still embeds its query text with the real model.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.context import Context
from bench.corpus import MB, mixed_text
from offprompt.memory.storage.lexical import ChunkRecord
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import index_tokens

Vectors = npt.NDArray[np.float32]
INSERT_BATCH = 1000
CHUNK_TOKENS = 200
NOISE = 0.05  # per dimension: cosine to the source vector about 0.7, like neighbouring passages of one text


def chunk_texts(text: str, tokens: int = CHUNK_TOKENS) -> list[str]:
    """`text` cut every `tokens` tokens: stand-ins for the indexer's chunks, which average about that size.

    (The indexer's own chunks are taken from the collection where a measurement needs exactly them.)
    """
    data = text.encode("utf-8")
    offsets = index_tokens(data).offsets
    cuts = [int(o) for o in offsets[::tokens]] + [len(data)]
    return [data[a:b].decode("utf-8") for a, b in itertools.pairwise(cuts) if b > a]


def real_vectors(ctx: Context, n: int) -> tuple[list[str], Vectors]:
    """`n` real chunks and their embeddings by the real model: from this run's indexing if it made them."""
    cached = ctx.cache.get("real_vectors")
    if cached is None or len(cached[0]) < n:
        from offprompt.embedding import MiniLMEmbedding

        docs = chunk_texts(mixed_text(MB))
        while len(docs) < n:
            docs += docs
        docs = docs[:n]
        ctx.log(f"embedding {n} real chunks for the vector base (the store section would have cached them)")
        cached = (docs, MiniLMEmbedding().embed(docs))
        ctx.cache["real_vectors"] = cached
    docs, vecs = cached
    return docs[:n], vecs[:n]


def noisy(base: Vectors, n: int, rng: np.random.Generator) -> Vectors:
    rows = base[np.arange(n) % len(base)] + rng.normal(0.0, NOISE, size=(n, base.shape[1])).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def insert(
    memory: TaskMemory,
    namespace: str,
    docs: list[str],
    vectors: Vectors,
    *,
    first_chunk: int = 0,
    max_offset: int = 1,
) -> None:
    """Add chunk records for `namespace` straight to the memory's collection, as the indexer writes them, and
    the same chunks to its lexical index, so that a hybrid query searches both indexes full (the indexer is held
    while a collection is built this way)."""
    collection: Any = memory.text._get_collection()  # type: ignore[attr-defined]
    stored = len(memory.text.load(namespace, 0))  # type: ignore[attr-defined]
    span = max(stored // max(len(docs), 1), 1)
    records = [
        # Spans inside the stored text, so a hit reads text back from the file as a real one does.
        ChunkRecord(namespace, 0, first_chunk + k, (k * span) % stored, min((k * span) % stored + span, stored), 0, "")
        for k in range(len(docs))
    ]
    memory.text._lexical.add(namespace, 0, records, docs, [""] * len(docs))  # type: ignore[attr-defined]
    for start in range(0, len(docs), INSERT_BATCH):
        stop = min(start + INSERT_BATCH, len(docs))
        chunks = range(first_chunk + start, first_chunk + stop)
        collection.upsert(
            ids=[f"{namespace}:0:{c}" for c in chunks],
            documents=docs[start:stop],
            embeddings=vectors[start:stop],
            metadatas=[{"namespace": namespace, "item": 0, "chunk": c, "offset": c % max_offset} for c in chunks],
        )
