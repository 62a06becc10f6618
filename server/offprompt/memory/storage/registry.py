"""Which storage and index implementations a memory uses, chosen by its settings.

Each table maps a settings value to a builder; a new backend is one entry in one table (and its class
implementing the protocol in `base.py` or `indexes.py`), with nothing to change in the task memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from offprompt.memory.storage.base import BlobStorage, TextStorage
from offprompt.memory.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.memory.storage.dense import ChromaDenseIndex, ChromaLocation, EmbeddingSpec
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.lexical import SqliteLexicalIndex
from offprompt.memory.storage.text import IndexedTextStorage

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


def open_backends(choice: BackendChoice) -> Backends:
    """The text and blob storages of one memory, with their indexes, as its settings choose them."""
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
