"""Dense search over a memory's chunks: their vectors in a Chroma collection.

The embedding function is a choice (:class:`EmbeddingSpec`): the bundled
offline MiniLM by default, or any embedding function Chroma knows by name
(``openai``, ``ollama``, ``sentence_transformer``, …) with its config. The
collection remembers which function built it, and reopening it with another
one raises :class:`IncompatibleStoreError`: vectors of two models can't be
compared, and searching them would return noise without a word of warning.

Chroma and the model load on first use (about two seconds), never at start-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from offprompt.errors import ConfigError, CredentialsRefusedError, IncompatibleStoreError
from offprompt.memory.storage.files import FILE_MODE, disk_bytes, private_file, sqlite_used_bytes
from offprompt.memory.storage.lexical import ChunkRecord

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection as ChromaCollection

__all__ = ["ChromaDenseIndex", "ChromaLocation", "EmbeddingSpec", "collection_name"]

logger = logging.getLogger(__name__)

#: What chromadb's errors say when the server turns a request's token down (its client raises ValueError
#: with the body for a 401 from a gateway, AuthorizationError or ChromaAuthError from Chroma's own auth).
_REFUSED_WORDS = ("Unauthorized", "Forbidden", "AuthorizationError", "AuthError", "AuthenticationError")
DEFAULT_EMBEDDING = "offprompt-minilm-int8"  # embedding.EF_NAME, without importing onnxruntime's side at start-up
_MODEL_KEYS = ("model", "model_name", "model_id", "deployment_id")


def enter_chroma() -> None:
    """Import Chroma's package tree by one door, `offprompt.embedding`, before any other of its modules.

    Its modules import each other in a circle. Two threads that entered it by different modules at once (the
    chunker's `offprompt.embedding`, the embedder's `chromadb`, both started by a restart that resumed indexing)
    each held a module the other needed, and Python's import locks refused one of them ("deadlock detected by
    _ModuleLock"): the text being chunked stayed unsearchable, restart after restart. Through one door, the
    second thread waits for the first's whole import."""
    import offprompt.embedding  # noqa: F401


@dataclass(frozen=True, slots=True)
class ChromaLocation:
    """Where the chunk vectors live: a local directory, process memory, or a Chroma server."""

    mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    path: Path | None = None
    url: str | None = None
    #: Sent with every request to the Chroma server (http mode); kept out of reprs and logs.
    auth_token: str | None = field(default=None, repr=False)

    def headers(self) -> dict[str, str]:
        """The token as Chroma's token auth reads it (`Authorization: Bearer`, Chroma's client default) and as
        Chroma Cloud and `X-Chroma-Token` setups read it; a gateway in front of the server checks either."""
        if not self.auth_token:
            return {}
        return {"Authorization": f"Bearer {self.auth_token}", "X-Chroma-Token": self.auth_token}

    def http_client(self) -> Any:
        """A client of the Chroma server (http mode); it connects at once, so it raises if the server is away."""
        enter_chroma()
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        host = self.url or "http://127.0.0.1:8000"
        try:
            return chromadb.HttpClient(host=host, headers=self.headers(), settings=settings)
        except Exception as exc:
            refused = self.refused(exc)
            if refused is None:
                raise
            raise refused from None

    def refused(self, exc: BaseException) -> CredentialsRefusedError | None:
        """The error to give when `exc` is the Chroma server turning offprompt's token down (401 or 403), not an
        outage: retrying will not help, the token in the config must change."""
        if isinstance(exc, CredentialsRefusedError):
            return exc
        text = f"{type(exc).__name__} {exc}"
        if not any(word in text for word in _REFUSED_WORDS):
            return None
        said = "no token" if not self.auth_token else "the token configured"
        return CredentialsRefusedError(
            f"the Chroma server at {self.url} refused {said} ({' '.join(str(exc).split())[:120]}): set "
            '"auth_token" in "chroma" in the offprompt block to the token that server expects (sent as '
            "Authorization: Bearer and X-Chroma-Token); calling again will not help until it is right"
        )


@dataclass(frozen=True, slots=True)
class EmbeddingSpec:
    """Which embedding function builds a memory's vectors: a name Chroma knows it by, and its config.

    ``EmbeddingSpec()`` is the bundled offline MiniLM. Others are Chroma's own, e.g.
    ``EmbeddingSpec("ollama", {"url": "http://localhost:11434", "model_name": "nomic-embed-text"})`` or
    ``EmbeddingSpec("openai", {"model_name": "text-embedding-3-small", "api_key_env_var": "OPENAI_API_KEY"})``;
    each takes the config its ``build_from_config`` reads.
    """

    name: str = DEFAULT_EMBEDDING
    config: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """The embedding function; a ConfigError that names the choices if it can't be built."""
        enter_chroma()  # which also registers the bundled function with Chroma
        from chromadb.utils.embedding_functions import known_embedding_functions

        import offprompt.embedding

        if self.name == DEFAULT_EMBEDDING:
            return offprompt.embedding.MiniLMEmbedding.build_from_config(dict(self.config))
        cls = known_embedding_functions.get(self.name)
        if cls is None:
            names = ", ".join(sorted(known_embedding_functions))
            raise ConfigError(f"unknown embedding function {self.name!r}: use one of {names}")
        try:
            return cls.build_from_config(dict(self.config))
        except Exception as exc:  # each function fails its own way: a missing package, key or setting
            raise ConfigError(
                f"embedding function {self.name!r} could not be built from {dict(self.config)!r}: {exc}. "
                "Fix its config, or remove the embedding setting to use the bundled offline model."
            ) from exc


def _record(meta: Mapping[str, Any]) -> ChunkRecord:
    return ChunkRecord(
        namespace=str(meta["namespace"]),
        item=int(meta["item"]),
        chunk=int(meta["chunk"]),
        start=int(meta.get("start", -1)),
        end=int(meta.get("end", -1)),
        offset=int(meta["offset"]),
        context=str(meta.get("context", "")),
    )


def identity(name: str, config: Mapping[str, Any]) -> str:
    """What must match for two embedding functions' vectors to be comparable: the function and its model."""
    model = next((str(config[k]) for k in _MODEL_KEYS if config.get(k)), "")
    return f"{name} ({model})" if model else name


def collection_name(memory_name: str) -> str:
    """A valid Chroma collection name (3-512 of [a-zA-Z0-9._-], alphanumeric at both ends)."""
    cleaned = re.sub(r"[^a-zA-Z0-9._-]", "-", f"offprompt-{memory_name}").strip("-._")
    return cleaned[:512]


class ChromaDenseIndex:
    """Chunk vectors in one Chroma collection per memory, opened on first use."""

    def __init__(self, memory_name: str, location: ChromaLocation, spec: EmbeddingSpec, tombstones: Path) -> None:
        self._memory_name = memory_name
        self._location = location
        self._spec = spec
        self._tombstones = tombstones
        self._client: Any = None
        self._function: Any = None
        self._collection: ChromaCollection | None = None
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._collection is not None

    def open(self) -> ChromaCollection:
        """The collection, opened (or created) on first use; IncompatibleStoreError if another model built it."""
        if self._collection is not None:
            return self._collection
        with self._lock:
            if self._collection is None:
                self._collection = self._open()
            return self._collection

    def _open(self) -> ChromaCollection:
        enter_chroma()
        import chromadb  # heavy: imported on first use, not at start-up
        import chromadb.errors
        from chromadb.config import Settings

        if self._function is None:  # kept across reopenings: loading a model takes a second
            self._function = self._spec.build()
        function = self._function
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        name = collection_name(self._memory_name)
        if self._location.mode == "http":
            self._client = self._location.http_client()
        elif self._location.mode == "ephemeral":
            # Ephemeral clients in one process share one store: keep each memory's collection apart.
            self._client = chromadb.EphemeralClient(settings=settings)
            name = f"{name}-{id(self)}"
        else:
            assert self._location.path is not None
            # Private from the start: Chroma makes its files with the default mode (its segment files are
            # fixed when the memory is next opened; the 0700 directory already keeps them from other users).
            private_file(self._location.path / "chroma.sqlite3")
            self._client = chromadb.PersistentClient(path=str(self._location.path), settings=settings)
        try:
            existing = self._client.get_collection(name, embedding_function=None)
        except chromadb.errors.NotFoundError:
            existing = None
        wanted = identity(function.name(), function.get_config())
        if existing is not None:
            built = existing.configuration_json.get("embedding_function") or {}
            found = identity(str(built.get("name", DEFAULT_EMBEDDING)), built.get("config") or {})
            if found != wanted:
                raise IncompatibleStoreError(
                    f'memory "{self._memory_name}" was indexed with the embedding function {found}, but '
                    f"{wanted} is configured; vectors of different models can't be searched together. Set the "
                    f"embedding back to {found}, or use another memory_name for {wanted} "
                    "(or delete this memory's directory to re-index it)."
                )
        collection: ChromaCollection = self._client.get_or_create_collection(
            name, embedding_function=function, configuration={"hnsw": {"space": "cosine"}}
        )
        if self._tombstones.exists():
            for namespace in set(self._tombstones.read_text(encoding="utf-8").split()):
                collection.delete(where={"namespace": namespace})
            self._tombstones.unlink()
        return collection

    def drop(self) -> None:
        """Delete the memory's collection on the Chroma server (a local one goes with the memory's directory)."""
        enter_chroma()
        import chromadb.errors

        if self._location.mode != "http":
            return
        with contextlib.suppress(chromadb.errors.NotFoundError):  # never embedded anything, or dropped already
            self._location.http_client().delete_collection(collection_name(self._memory_name))

    def check(self) -> None:
        """Reopen the collection (a restarted server, deletes noted while it was away) and embed a word."""
        with self._lock:
            self._collection = None
        self.open()
        self.embed(["offprompt"])

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        self.open()
        if hasattr(self._function, "embed"):  # the bundled model: one numpy array, no per-row copies
            return list(self._function.embed(list(texts)))
        return list(self._function(list(texts)))

    def embed_query(self, text: str) -> Sequence[float]:
        self.open()
        # Some models embed queries differently from documents (instruction prefixes); the bundled one embeds
        # them on the caller's thread (a query's worker, made by a serving thread), at the serving priority.
        vectors = self._function.embed_query([text])
        return [float(x) for x in vectors[0]]

    def upsert(self, records: Sequence[ChunkRecord], documents: Sequence[str], vectors: Sequence[Any]) -> None:
        self.open().upsert(
            ids=[r.id for r in records],
            documents=list(documents),
            embeddings=list(vectors),
            metadatas=[
                {
                    "namespace": r.namespace,
                    "item": r.item,
                    "chunk": r.chunk,
                    "offset": r.offset,
                    "start": r.start,
                    "end": r.end,
                    "context": r.context,
                }
                for r in records
            ],
        )

    def search(
        self, vector: Sequence[float], namespaces: Collection[str] | None, limit: int
    ) -> list[tuple[ChunkRecord, float, str]]:
        """The chunks nearest the query's vector, best first: each with its cosine similarity and stored document."""
        if namespaces is not None and not namespaces:
            return []
        where: dict[str, Any] | None = None if namespaces is None else {"namespace": {"$in": sorted(namespaces)}}
        result = self.open().query(
            query_embeddings=[vector], n_results=limit, where=where, include=["metadatas", "distances", "documents"]
        )
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        documents = (result.get("documents") or [[]])[0]
        return [
            (_record(meta), round(1.0 - float(d), 4), doc or "")
            for meta, d, doc in zip(metadatas, distances, documents, strict=True)
        ]

    def similarities(self, vector: Sequence[float], records: Sequence[ChunkRecord]) -> dict[str, float]:
        """Cosine similarity of the query's vector to these chunks (those not embedded yet are left out)."""
        if not records:
            return {}
        found = self.open().get(ids=[r.id for r in records], include=["embeddings"])
        ids = found.get("ids") or []
        embeddings = found.get("embeddings")
        if embeddings is None or not len(ids):
            return {}
        matrix = np.asarray(embeddings, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        cosine = (matrix @ query) / np.clip(norms, 1e-12, None)
        return {str(i): round(float(c), 4) for i, c in zip(ids, cosine, strict=True)}

    def delete(self, namespace: str) -> None:
        with self._lock:
            collection = self._collection
            if collection is None:
                # Opening Chroma costs a second; note the namespace and drop its chunks when it opens.
                self._note_deleted(namespace)
                return
        try:
            collection.delete(where={"namespace": namespace})
        except Exception as exc:  # a server away: the text is deleted now, its vectors when the server is back
            logger.warning("dropping the vectors of %s failed (%s): they go when Chroma is reopened", namespace, exc)
            with self._lock:
                self._note_deleted(namespace)
                self._collection = None

    def _note_deleted(self, namespace: str) -> None:
        fd = os.open(self._tombstones, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(namespace + "\n")

    def disk_bytes(self) -> int:
        """A persistent store's files (its SQLite file by used pages); 0 for an ephemeral or remote one."""
        path = self._location.path
        if self._location.mode != "persistent" or path is None or not path.is_dir():
            return 0
        database = path / "chroma.sqlite3"
        wal = path / "chroma.sqlite3-wal"
        others = disk_bytes(path) - disk_bytes(database) - (disk_bytes(wal) if wal.exists() else 0)
        return sqlite_used_bytes(database) + others

    def delete_item(self, namespace: str, item: int) -> None:
        """Drop one item's vectors, e.g. those of an earlier chunking before it is embedded again."""
        self.open().delete(where={"$and": [{"namespace": namespace}, {"item": item}]})
