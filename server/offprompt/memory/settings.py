"""A task memory's settings: where it lives, how long it keeps things, and the backends they choose."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs

from offprompt.memory.records import MAX_BYTES as RECORDS_MAX_BYTES
from offprompt.memory.storage import BackendChoice, EmbeddingSpec, drop_vectors
from offprompt.niceness import BACKGROUND


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("offprompt", appauthor=False))


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Where a memory lives and how long it keeps things."""

    name: str = "default"
    data_dir: Path = field(default_factory=default_data_dir)
    chroma: Literal["persistent", "ephemeral", "http"] = "persistent"
    chroma_url: str | None = None
    #: A shared memory's PostgreSQL (catalog, texts, lexical index, blobs, indexing queue); None: the embedded one.
    postgres: str | None = field(default=None, repr=False)  # may hold a password: never in a repr or a log
    #: Sent to the Chroma server with every request (http mode).
    chroma_token: str | None = field(default=None, repr=False)
    #: A shared memory: this server embeds texts (True), or only chunks them (False; `offprompt index` embeds).
    indexer: bool = True
    #: A shared memory: bytes of local copies of texts kept at most.
    cache_bytes: int = 512 * 1024**2
    #: A shared memory: the key of its secrets table in the database, the same on every server (None: each
    #: server resolves only the handles it gave, from the file in its directory).
    secrets_key: str | None = field(default=None, repr=False)
    blobs: Literal["file", "memory"] = "file"
    ttl_seconds: float | None = 30 * 24 * 3600
    max_bytes: int | None = 2 * 1024**3
    #: The embedding function that builds the memory's vectors; the bundled offline MiniLM by default.
    embedding: EmbeddingSpec = field(default_factory=EmbeddingSpec)
    #: The records of one text (a table's, a log's) take at most this many bytes of JSON, else are not kept.
    records_max_bytes: int = RECORDS_MAX_BYTES
    #: How far below the process's priority the embedder's threads run (set as the memory opens).
    embedder_niceness: int = BACKGROUND

    @property
    def directory(self) -> Path:
        return self.data_dir.expanduser() / self.name


def drop_remote_vectors(settings: MemorySettings) -> None:
    """Delete the memory's vectors on a Chroma server, if it keeps them there (before its directory goes); raises
    if the server can't be reached."""
    drop_vectors(backend_choice(settings, readonly=True))


def backend_choice(settings: MemorySettings, *, readonly: bool = False, resume_indexing: bool = True) -> BackendChoice:
    return BackendChoice(
        directory=settings.directory,
        memory_name=settings.name,
        blobs=settings.blobs,
        vectors=settings.chroma,
        vectors_url=settings.chroma_url,
        postgres=settings.postgres,
        vectors_token=settings.chroma_token,
        embedding=settings.embedding,
        readonly=readonly,
        resume_indexing=resume_indexing,
        embed=settings.indexer,
        cache_bytes=settings.cache_bytes,
        secrets_key=settings.secrets_key,
        records_max_bytes=settings.records_max_bytes,
    )
