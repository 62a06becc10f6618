"""Blob storages: an in-process dict, and a durable content-addressed file store."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path

from offprompt.artifacts import Artifact, BlobArtifact
from offprompt.errors import NotFoundError
from offprompt.memory.storage.base import StoredItem
from offprompt.memory.storage.files import write_atomically


def payload_of(artifact: Artifact) -> bytes:
    if not isinstance(artifact, BlobArtifact):
        raise TypeError(f"blob storage takes blob artifacts, not {artifact.kind}")
    return artifact.value


class MemoryBlobStorage:
    """Blobs in a dict: fast, gone when the process ends."""

    def __init__(self) -> None:
        self._blobs: dict[tuple[str, int], bytes] = {}

    def store(self, namespace: str, item: int, artifact: Artifact) -> StoredItem:
        data = payload_of(artifact)
        self._blobs[(namespace, item)] = data
        return StoredItem(tokens=0, bytes=len(data))

    def load(self, namespace: str, item: int) -> bytes:
        try:
            return self._blobs[(namespace, item)]
        except KeyError:
            raise NotFoundError(f"no blob stored as item {item} of {namespace!r}") from None

    def delete(self, namespace: str) -> None:
        for key in [k for k in self._blobs if k[0] == namespace]:
            del self._blobs[key]

    def namespaces(self) -> set[str]:
        return {namespace for namespace, _ in self._blobs}


class FileBlobStorage:
    """Blobs on disk, content-addressed by sha256 (`objects/ab/abcd…`); refs name them per namespace.

    The same screenshot stored twice takes the space once; an object is removed
    when the last namespace that refers to it is deleted.
    """

    def __init__(self, root: Path) -> None:
        self._objects = root / "objects"
        self._refs = root / "refs"
        self._lock = threading.Lock()

    def _ref(self, namespace: str, item: int) -> Path:
        return self._refs / namespace / f"{item}.json"

    def _object(self, digest: str) -> Path:
        return self._objects / digest[:2] / digest

    def store(self, namespace: str, item: int, artifact: Artifact) -> StoredItem:
        data = payload_of(artifact)
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if not self._object(digest).exists():
                write_atomically(self._object(digest), data)
            write_atomically(self._ref(namespace, item), json.dumps({"sha256": digest}).encode())
        return StoredItem(tokens=0, bytes=len(data))

    def load(self, namespace: str, item: int) -> bytes:
        try:
            digest = json.loads(self._ref(namespace, item).read_bytes())["sha256"]
            return self._object(digest).read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"no blob stored as item {item} of {namespace!r}") from None

    def delete(self, namespace: str) -> None:
        with self._lock:
            folder = self._refs / namespace
            if not folder.exists():
                return
            dropped = {json.loads(ref.read_bytes())["sha256"] for ref in folder.glob("*.json")}
            shutil.rmtree(folder)
            still_used = {json.loads(ref.read_bytes())["sha256"] for ref in self._refs.glob("*/*.json")}
            for digest in dropped - still_used:
                self._object(digest).unlink(missing_ok=True)

    def namespaces(self) -> set[str]:
        if not self._refs.exists():
            return set()
        return {p.name for p in self._refs.iterdir() if p.is_dir()}
