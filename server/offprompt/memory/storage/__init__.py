"""Where artifacts live: text in raw files plus a Chroma index, blobs in a dict or on disk."""

from offprompt.memory.storage.base import BlobStorage, StoredItem, TextStorage
from offprompt.memory.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.memory.storage.dense import ChromaLocation, EmbeddingSpec
from offprompt.memory.storage.text import ChromaTextStorage

__all__ = [
    "BlobStorage",
    "ChromaLocation",
    "ChromaTextStorage",
    "EmbeddingSpec",
    "FileBlobStorage",
    "MemoryBlobStorage",
    "StoredItem",
    "TextStorage",
]
