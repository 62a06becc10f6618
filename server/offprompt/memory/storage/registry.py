"""Which storage and index implementations a memory uses, chosen by its settings.

Each table maps a settings value to a builder: the store backend (files in the memory's directory, or a
PostgreSQL database many servers share) picks the text storage, the lexical index and the database; the
`blobs` and `chroma` settings pick the blob storage and the dense index. A new backend is one entry in each
table it differs in (and its classes implementing the protocols in `base.py` and `indexes.py`), plus its
catalog in `memory/backends.py`, with nothing to change in the task memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from offprompt.memory.records import MAX_BYTES as RECORDS_MAX_BYTES
from offprompt.memory.storage.base import BlobStorage, TextStorage
from offprompt.memory.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.memory.storage.dense import ChromaDenseIndex, ChromaLocation, EmbeddingSpec
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.lexical import SqliteLexicalIndex
from offprompt.memory.storage.text import IndexedTextStorage
from offprompt.private_dirs import private_dir

if TYPE_CHECKING:
    from offprompt.memory.storage.pg import PgDatabase

logger = logging.getLogger(__name__)

BlobBackend = Literal["file", "memory"]
VectorBackend = Literal["persistent", "ephemeral", "http"]
#: Where a memory's texts, blobs, lexical index (and catalog) live: files and SQLite in its directory, or a
#: PostgreSQL database many servers share.
StoreBackend = Literal["files", "postgres"]


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
    #: A shared memory: everything but the vectors in this PostgreSQL database.
    postgres: str | None = None
    #: A shared memory: this process embeds (else it only chunks, and indexer processes embed).
    embed: bool = True
    #: A shared memory: its local copies of texts, at most.
    cache_bytes: int = 512 * 1024**2
    #: A shared memory: the key its secrets table is sealed with (None: each server keeps its own table).
    secrets_key: str | None = field(default=None, repr=False)
    #: The records of one text (a table's, a log's) take at most this many bytes of JSON, else are not kept.
    records_max_bytes: int = RECORDS_MAX_BYTES

    @property
    def store(self) -> StoreBackend:
        return "files" if self.postgres is None else "postgres"


@dataclass(frozen=True, slots=True)
class Backends:
    text: TextStorage
    blobs: BlobStorage
    #: The shared memory's database, for its catalog (None: the embedded memory, whose catalog is a file).
    database: PgDatabase | None = None


def _chroma(choice: BackendChoice) -> DenseIndex:
    path = choice.directory / "chroma" if choice.vectors == "persistent" else None
    location = ChromaLocation(mode=choice.vectors, path=path, url=choice.vectors_url, auth_token=choice.vectors_token)
    return ChromaDenseIndex(choice.memory_name, location, choice.embedding, choice.directory / "text" / "deleted.txt")


def _no_vectors(choice: BackendChoice) -> DenseIndex:
    from offprompt.memory.storage.no_dense import NoDenseIndex

    return NoDenseIndex()


def _files_text(choice: BackendChoice, db: PgDatabase | None, lexical: LexicalIndex, dense: DenseIndex) -> TextStorage:
    return IndexedTextStorage(
        choice.directory / "text",
        lexical,
        dense,
        readonly=choice.readonly,
        resume=choice.resume_indexing,
        records_max_bytes=choice.records_max_bytes,
    )


def _shared_text(choice: BackendChoice, db: PgDatabase | None, lexical: LexicalIndex, dense: DenseIndex) -> TextStorage:
    """Texts and the indexing queue in PostgreSQL; `choice.directory` holds this server's copies of them."""
    from offprompt.memory.storage.pg_text import SharedTextStorage

    assert db is not None
    return SharedTextStorage(
        db,
        choice.directory / "text",
        lexical,
        dense,
        index=choice.resume_indexing and not choice.readonly,
        embed=choice.embed,
        cache_bytes=choice.cache_bytes,
    )


def _sqlite_fts(choice: BackendChoice, db: PgDatabase | None) -> LexicalIndex:
    return SqliteLexicalIndex(choice.directory / "text" / "lexical.sqlite3", readonly=choice.readonly)


def _pg_fts(choice: BackendChoice, db: PgDatabase | None) -> LexicalIndex:
    from offprompt.memory.storage.pg_lexical import PgLexicalIndex

    assert db is not None
    return PgLexicalIndex(db)


def _pg_blobs(choice: BackendChoice, db: PgDatabase | None) -> BlobStorage:
    from offprompt.memory.storage.pg_blob import PgBlobStorage

    assert db is not None
    return PgBlobStorage(db)


def _pg_database(choice: BackendChoice) -> PgDatabase | None:
    from offprompt.memory.storage.pg import PgDatabase

    assert choice.postgres is not None
    return PgDatabase(choice.postgres, choice.memory_name)


def _text_directory(choice: BackendChoice) -> None:
    if choice.store == "postgres" or not choice.readonly:  # a shared memory's copies are this server's own
        private_dir(choice.directory / "text")  # 0700 now: a killed process never reaches the close that fixes modes


#: The database a store backend keeps its storages in (the PostgreSQL implementations share one pool).
DATABASES: dict[StoreBackend, Callable[[BackendChoice], PgDatabase | None]] = {
    "files": lambda choice: None,
    "postgres": _pg_database,
}
TEXT_STORAGES: dict[StoreBackend, Callable[[BackendChoice, PgDatabase | None, LexicalIndex, DenseIndex], TextStorage]]
TEXT_STORAGES = {"files": _files_text, "postgres": _shared_text}
LEXICAL_INDEXES: dict[StoreBackend, Callable[[BackendChoice, PgDatabase | None], LexicalIndex]] = {
    "files": _sqlite_fts,
    "postgres": _pg_fts,
}
#: Blobs by the `blobs` setting in files; a shared memory keeps its blobs in its database whatever it says.
BLOB_STORAGES: dict[BlobBackend | Literal["postgres"], Callable[[BackendChoice, PgDatabase | None], BlobStorage]] = {
    "file": lambda choice, db: FileBlobStorage(choice.directory / "blobs"),
    "memory": lambda choice, db: MemoryBlobStorage(),
    "postgres": _pg_blobs,
}
#: Vectors by the `chroma` setting; "none" for a shared memory without a Chroma server (vectors on one server's
#: disk would be that server's alone): it searches by words.
DENSE_INDEXES: dict[VectorBackend | Literal["none"], Callable[[BackendChoice], DenseIndex]] = {
    "persistent": _chroma,
    "ephemeral": _chroma,
    "http": _chroma,
    "none": _no_vectors,
}


def _vectors(choice: BackendChoice) -> VectorBackend | Literal["none"]:
    if choice.store == "files" or choice.vectors == "http":
        return choice.vectors
    logger.warning(
        'shared memory "%s" has no Chroma server ("chroma": {"mode": "http", "url": ...}): it searches by words',
        choice.memory_name,
    )
    return "none"


def drop_vectors(choice: BackendChoice) -> None:
    """Delete a memory's vectors where they live apart from its directory (a Chroma server); raises if it is
    away. Vectors in the directory go with it."""
    if choice.vectors == "http":
        index = _chroma(choice)
        assert isinstance(index, ChromaDenseIndex)
        index.drop()


def open_backends(choice: BackendChoice) -> Backends:
    """The text and blob storages of one memory, with their indexes, as its settings choose them from the
    tables: files, SQLite and Chroma in its directory, or PostgreSQL (with a Chroma server) for a shared one."""
    store = choice.store
    database = DATABASES[store](choice)
    _text_directory(choice)
    lexical = LEXICAL_INDEXES[store](choice, database)
    dense = DENSE_INDEXES[_vectors(choice)](choice)
    text = TEXT_STORAGES[store](choice, database, lexical, dense)
    blobs = BLOB_STORAGES["postgres" if store == "postgres" else choice.blobs](choice, database)
    return Backends(text=text, blobs=blobs, database=database)
