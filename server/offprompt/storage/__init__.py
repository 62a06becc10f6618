"""Where artifacts live: text in raw files plus a Chroma index, blobs in a dict or on disk."""

from offprompt.storage.base import BlobStorage, StoredItem, TextStorage
from offprompt.storage.blob import FileBlobStorage, MemoryBlobStorage
from offprompt.storage.dense import ChromaLocation, EmbeddingSpec
from offprompt.storage.text import ChromaTextStorage

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
