"""What both text storages share of indexing: a job, the embedder's queue, its batch sizes, its priority.

A stored text is indexed in two steps, each a job: chunked (its words to the lexical index), then embedded
slice by slice (its chunks' vectors to the dense index). The files storage runs its jobs in this process's
threads; the shared one takes them from PostgreSQL's `jobs` table.
"""

from __future__ import annotations

import itertools
import queue
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from offprompt.niceness import lower_this_thread

__all__ = ["EMBED_BATCH", "EMBED_SLICE", "EmbedQueue", "IndexJob", "lower_priority", "source_hint"]

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
