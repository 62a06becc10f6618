"""What both text storages share of indexing: a job, the embedder's queue, its batch sizes, its priority.

A stored text is indexed in two steps, each a job: chunked (its words to the lexical index), then embedded
slice by slice (its chunks' vectors to the dense index). The files storage runs its jobs in this process's
threads; the shared one takes them from PostgreSQL's `jobs` table.
"""

from __future__ import annotations

import itertools
import json
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from offprompt.errors import NotFoundError
from offprompt.memory import chunking
from offprompt.memory.records import record_starts
from offprompt.memory.storage.indexes import LexicalIndex
from offprompt.memory.storage.lexical import ChunkRecord
from offprompt.memory.storage.local_texts import LocalTexts
from offprompt.memory.storage.windows import spans
from offprompt.niceness import lower_this_thread
from offprompt.tokens import TokenIndex

__all__ = [
    "EMBED_BATCH",
    "EMBED_SLICE",
    "EmbedQueue",
    "IndexJob",
    "chunk_item",
    "lower_priority",
    "source_hint",
    "window_item",
]

EMBED_BATCH: Final = 32
#: The embedder works on one text for at most this many chunks before it looks for a smaller one waiting: a small
#: result stored while a huge one embeds is searchable by meaning in seconds, not after the huge one.
EMBED_SLICE: Final = 8 * EMBED_BATCH


@dataclass(frozen=True, slots=True)
class IndexJob:
    namespace: str
    item: int
    fresh: bool  # stored by this process, so nothing of it is in the indexes yet
    done: int = 0  # chunks already embedded (by earlier slices)
    retried: bool = False  # failed once with the dense index reachable: a second failure is the text's own
    windows_only: bool = False  # chunked by a version that made no windows: make them (`window_item`)


class EmbedQueue:
    """Texts waiting to be embedded, the one with the fewest chunks left first, then the newest: a quick win for
    the model before a long job. ``None`` (closing) comes out before anything else."""

    def __init__(self) -> None:
        self._heap: queue.PriorityQueue[tuple[int, int, IndexJob | None]] = queue.PriorityQueue()
        self._order = itertools.count()

    def put(self, job: IndexJob | None, left: int = 0) -> None:
        # Newest first among equals: the count runs down.
        self._heap.put((-1, 0, None) if job is None else (left, -next(self._order), job))

    def get(self) -> IndexJob | None:
        return self._heap.get()[2]


def source_hint(meta: Mapping[str, Any]) -> str:
    """A file name or MIME type the MCP block carried, which tells the chunker what the text is."""
    mcp = meta.get("mcp")
    if not isinstance(mcp, dict):
        return ""
    resource = mcp.get("resource")
    fields = resource if isinstance(resource, dict) else mcp
    return " ".join(str(fields[k]) for k in ("uri", "mimeType") if isinstance(fields.get(k), str))


def lower_priority() -> None:
    """Indexing yields the CPU to the calls the model is waiting for."""
    lower_this_thread()


def text_chunks(data: bytes, kind: str, hint: str = "") -> list[chunking.Chunk]:
    """A stored text's search chunks: cut along its records where they are several lines each (a commit)."""
    return chunking.chunk(data, kind, hint, records=record_starts(data.decode("utf-8"), kind))


def chunk_item(texts: LocalTexts, lexical: LexicalIndex, write_lock: threading.Lock, namespace: str, item: int) -> bool:
    """Cut a stored text into chunks and put them in the lexical index; False if it was deleted meanwhile (or,
    for a copy of a text kept elsewhere, is not stored any more)."""
    try:
        with texts.held(namespace, item) as path:
            data = path.read_bytes()
            offsets = TokenIndex.from_bytes(texts.path(namespace, item, ".idx").read_bytes()).offsets
            sidecar = json.loads(texts.path(namespace, item, ".json").read_bytes())
    except (FileNotFoundError, NotFoundError):
        return False
    chunks = text_chunks(data, sidecar["kind"], sidecar.get("hint", ""))
    starts = np.asarray([c.start for c in chunks], dtype=np.int64)
    first_tokens = (np.maximum(np.searchsorted(offsets, starts, side="right") - 1, 0)).tolist()
    records = [
        ChunkRecord(namespace, item, n, c.start, c.end, int(first_tokens[n]), c.context) for n, c in enumerate(chunks)
    ]
    chunk_texts = [data[c.start : c.end].decode("utf-8") for c in chunks]
    titles = [f"{c.context}\n{c.titles}" for c in chunks]
    with write_lock:
        if not texts.path(namespace, item, ".txt").exists():
            return False
        lexical.add(namespace, item, records, chunk_texts, titles)
    return True


def window_item(
    texts: LocalTexts, lexical: LexicalIndex, write_lock: threading.Lock, namespace: str, item: int
) -> None:
    """Put a stored text's windows of characters (`windows.py`) in the lexical index, after its chunks: a query
    does not wait for them (about a third of a second for 1 MB)."""
    try:
        with texts.held(namespace, item) as path:
            data = path.read_bytes()
    except (FileNotFoundError, NotFoundError):
        return
    cut = spans(data.decode("utf-8"))  # stored well-formed
    window_texts = [data[a:b].decode("utf-8") for a, b in cut]
    with write_lock:
        if texts.path(namespace, item, ".txt").exists():
            lexical.add_windows(namespace, item, cut, window_texts)
