"""Which storage and index implementations a memory uses, chosen by its settings.

Each table maps a settings value to a builder; a new backend is one entry in one table (and its class
implementing the protocol in `base.py` or `indexes.py`), with nothing to change in the task memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from offprompt.memory.storage.base import BlobStorage, TextStorage
from offprompt.memory.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.memory.storage.dense import ChromaDenseIndex, ChromaLocation, EmbeddingSpec
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.lexical import SqliteLexicalIndex
from offprompt.memory.storage.text import IndexedTextStorage

if TYPE_CHECKING:
    from offprompt.memory.storage.pg import PgDatabase

logger = logging.getLogger(__name__)

BlobBackend = Literal["file", "memory"]
VectorBackend = Literal["persistent", "ephemeral", "http"]


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """The settings that choose the backends of one memory, in its directory."""

    directory: Path
    memory_name: str
    blobs: BlobBackend = "file"
    vectors: VectorBackend = "persistent"
    vectors_url: str | None = None
    vectors_token: str | None = field(default=None, repr=False)
    embedding: EmbeddingSpec = field(default_factory=EmbeddingSpec)
    #: Read the files and the lexical index as they are, write nothing (the command line beside a server).
    readonly: bool = False
    #: Index in the background what an earlier process left unindexed.
    resume_indexing: bool = True
    #: A shared memory: everything but the vectors in this PostgreSQL database (see `open_shared_backends`).
    postgres: str | None = None


def _chroma(choice: BackendChoice) -> DenseIndex:
    path = choice.directory / "chroma" if choice.vectors == "persistent" else None
    location = ChromaLocation(mode=choice.vectors, path=path, url=choice.vectors_url, auth_token=choice.vectors_token)
    return ChromaDenseIndex(choice.memory_name, location, choice.embedding, choice.directory / "text" / "deleted.txt")


def _sqlite_fts(choice: BackendChoice) -> LexicalIndex:
    return SqliteLexicalIndex(choice.directory / "text" / "lexical.sqlite3", readonly=choice.readonly)


BLOB_STORAGES: dict[BlobBackend, Callable[[BackendChoice], BlobStorage]] = {
    "file": lambda choice: FileBlobStorage(choice.directory / "blobs"),
    "memory": lambda choice: MemoryBlobStorage(),
}
DENSE_INDEXES: dict[VectorBackend, Callable[[BackendChoice], DenseIndex]] = {
    "persistent": _chroma,
    "ephemeral": _chroma,
    "http": _chroma,
}
LEXICAL_INDEX: Callable[[BackendChoice], LexicalIndex] = _sqlite_fts


def drop_vectors(choice: BackendChoice) -> None:
    """Delete a memory's vectors where they live apart from its directory (a Chroma server); raises if it is
    away. Vectors in the directory go with it."""
    if choice.vectors == "http":
        index = _chroma(choice)
        assert isinstance(index, ChromaDenseIndex)
        index.drop()


@dataclass(frozen=True, slots=True)
class Backends:
    text: TextStorage
    blobs: BlobStorage
    #: The shared memory's database, for its catalog (None: the embedded memory, whose catalog is a file).
    database: PgDatabase | None = None


def open_backends(choice: BackendChoice) -> Backends:
    """The text and blob storages of one memory, with their indexes, as its settings choose them."""
    if choice.postgres is not None:
        return open_shared_backends(choice)
    if not choice.readonly:
        (choice.directory / "text").mkdir(parents=True, exist_ok=True)
    text = IndexedTextStorage(
        choice.directory / "text",
        LEXICAL_INDEX(choice),
        DENSE_INDEXES[choice.vectors](choice),
        readonly=choice.readonly,
        resume=choice.resume_indexing,
    )
    return Backends(text=text, blobs=BLOB_STORAGES[choice.blobs](choice))


def open_shared_backends(choice: BackendChoice) -> Backends:
    """A memory many servers share: texts, lexical index, blobs and the indexing queue in PostgreSQL, vectors in
    the Chroma server (none without one: search by words). `choice.directory` holds this server's copies."""
    from offprompt.memory.storage.pg import PgDatabase
    from offprompt.memory.storage.pg_blob import PgBlobStorage
    from offprompt.memory.storage.pg_lexical import PgLexicalIndex
    from offprompt.memory.storage.pg_text import NoDenseIndex, SharedTextStorage

    assert choice.postgres is not None
    db = PgDatabase(choice.postgres, choice.memory_name)
    (choice.directory / "text").mkdir(parents=True, exist_ok=True)
    if choice.vectors == "http":
        dense: DenseIndex = _chroma(choice)
    else:  # vectors on one server's disk would be that server's alone
        logger.warning(
            'shared memory "%s" has no Chroma server ("chroma": {"mode": "http", "url": ...}): it searches by words',
            choice.memory_name,
        )
        dense = NoDenseIndex()
    text = SharedTextStorage(
        db, choice.directory / "text", PgLexicalIndex(db), dense, index=choice.resume_indexing and not choice.readonly
    )
    return Backends(text=text, blobs=PgBlobStorage(db), database=db)
