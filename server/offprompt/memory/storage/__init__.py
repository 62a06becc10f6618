"""Where artifacts live: text in raw files with a lexical and a dense index, blobs in a dict or on disk.

`base.py` and `indexes.py` hold the protocols, `registry.py` picks the implementations from the settings.
"""

from offprompt.memory.storage.base import BlobStorage, StoredItem, TextStorage
from offprompt.memory.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.memory.storage.dense import ChromaLocation, EmbeddingSpec
from offprompt.memory.storage.registry import BackendChoice, Backends, drop_vectors, open_backends
from offprompt.memory.storage.text import IndexedTextStorage

__all__ = [
    "BackendChoice",
    "Backends",
    "BlobStorage",
    "ChromaLocation",
    "EmbeddingSpec",
    "FileBlobStorage",
    "IndexedTextStorage",
    "MemoryBlobStorage",
    "StoredItem",
    "TextStorage",
    "drop_vectors",
    "open_backends",
]
