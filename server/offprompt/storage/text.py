"""Text storage: the exact text on disk, its chunks in a Chroma collection.

`store` writes the raw UTF-8 bytes and a token index (each token's byte
offset) before it returns, so a reference is never handed out for text that
could be lost. Chunking and embedding run on a background thread: a 1 MB text
is about a minute of embedding on two cores. Until a namespace is fully
indexed, `pending()` names it. Chunk ids are deterministic, so indexing that a
restart interrupted is simply redone.

Layout under `root`:  raw/{namespace}/{item}.txt  .idx (uint32 token offsets)
.json (kind)  .indexed (marker), and chroma/ for a persistent collection.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import shutil
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from offprompt import chunking
from offprompt.artifacts import Artifact
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.storage.base import Hit, LineMatch, StoredItem, Window
from offprompt.storage.blob import write_atomically
from offprompt.tokens import TokenIndex, index_tokens

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection as ChromaCollection

logger = logging.getLogger(__name__)

EMBED_BATCH = 32
_OFFSET_BYTES = 4


@dataclass(frozen=True, slots=True)
class ChromaLocation:
    """Where the chunk vectors live: a local directory, process memory, or a Chroma server."""

    mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    path: Path | None = None
    url: str | None = None


def collection_name(memory_name: str) -> str:
    """A valid Chroma collection name (3-512 of [a-zA-Z0-9._-], alphanumeric at both ends)."""
    cleaned = re.sub(r"[^a-zA-Z0-9._-]", "-", f"offprompt-{memory_name}").strip("-._")
    return cleaned[:512]


class ChromaTextStorage:
    """Lossless text on disk plus a Chroma index of its chunks, built in the background."""

    def __init__(self, root: Path, memory_name: str, location: ChromaLocation) -> None:
        self._raw = root / "raw"
        self._raw.mkdir(parents=True, exist_ok=True)
        self._tombstones = root / "deleted.txt"
        self._embed: Any = None
        self._memory_name = memory_name
        self._location = location
        self._collection: ChromaCollection | None = None
        self._client: Any = None
        self._collection_lock = threading.Lock()
        self._write_lock = threading.Lock()  # orders deletes against the indexer's writes
        self._queue: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self._pending: dict[str, int] = {}
        self._pending_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False
        for marker in self._raw.glob("*/*.json"):
            if not marker.with_suffix(".indexed").exists():
                self._enqueue(marker.parent.name, int(marker.stem))

    # -- paths ---------------------------------------------------------------

    def _path(self, namespace: str, item: int, suffix: str) -> Path:
        return self._raw / namespace / f"{item}{suffix}"

    def _require(self, namespace: str, item: int) -> Path:
        path = self._path(namespace, item, ".txt")
        if not path.exists():
            raise NotFoundError(f"no text stored as item {item} of {namespace!r}")
        return path

    # -- Storage -------------------------------------------------------------

    def store(self, namespace: str, item: int, artifact: Artifact) -> StoredItem:
        data = artifact.to_text().encode("utf-8")
        index = index_tokens(data)
        write_atomically(self._path(namespace, item, ".txt"), data)
        write_atomically(self._path(namespace, item, ".idx"), index.to_bytes())
        write_atomically(self._path(namespace, item, ".json"), json.dumps({"kind": artifact.kind}).encode())
        self._enqueue(namespace, item)
        return StoredItem(tokens=index.tokens, bytes=len(data))

    def load(self, namespace: str, item: int) -> bytes:
        return self._require(namespace, item).read_bytes()

    def delete(self, namespace: str) -> None:
        with self._write_lock:
            shutil.rmtree(self._raw / namespace, ignore_errors=True)
            with self._pending_lock:
                self._pending.pop(namespace, None)
            if self._collection is not None:
                self._collection.delete(where={"namespace": namespace})
            else:
                # Opening Chroma costs a second; note the namespace and drop its chunks when it opens.
                with open(self._tombstones, "a", encoding="utf-8") as f:
                    f.write(namespace + "\n")

    def namespaces(self) -> set[str]:
        return {p.name for p in self._raw.iterdir() if p.is_dir()}

    # -- reading -------------------------------------------------------------

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window:
        text_path = self._require(namespace, item)
        idx_path = self._path(namespace, item, ".idx")
        total = idx_path.stat().st_size // _OFFSET_BYTES - 1
        if offset < 0 or (offset >= total and not (offset == 0 and total == 0)):
            raise InvalidArgumentError(
                f"offset {offset} is past the end: item {item} of {namespace!r} has {total} tokens "
                f"(offsets 0 to {max(total - 1, 0)})"
            )
        if max_tokens <= 0:
            raise InvalidArgumentError(f"max_tokens must be at least 1, not {max_tokens}")
        end = min(offset + max_tokens, total)
        with open(idx_path, "rb") as f:
            start_byte = _read_offset(f, offset)
            end_byte = _read_offset(f, end)
        with open(text_path, "rb") as f:
            f.seek(start_byte)
            text = f.read(end_byte - start_byte).decode("utf-8")
        return Window(text=text, offset=offset, next_offset=end if end < total else None, total_tokens=total)

    def token_index(self, namespace: str, item: int) -> TokenIndex:
        self._require(namespace, item)
        return TokenIndex.from_bytes(self._path(namespace, item, ".idx").read_bytes())

    def grep(
        self, pattern: str, namespaces: Sequence[tuple[str, int]], max_matches: int
    ) -> tuple[list[LineMatch], bool]:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise InvalidArgumentError(f"invalid regular expression {pattern!r}: {exc}") from None
        if max_matches <= 0:
            raise InvalidArgumentError(f"max_matches must be at least 1, not {max_matches}")
        matches: list[LineMatch] = []
        for namespace, item in namespaces:
            path = self._path(namespace, item, ".txt")
            if not path.exists():
                continue
            text = path.read_bytes().decode("utf-8")
            index: TokenIndex | None = None
            byte_pos = 0
            for line_no, line in enumerate(text.split("\n"), start=1):
                found = regex.search(line)
                if found:
                    if len(matches) >= max_matches:
                        return matches, True
                    index = index or self.token_index(namespace, item)
                    at = byte_pos + len(line[: found.start()].encode("utf-8"))
                    matches.append(
                        LineMatch(
                            namespace=namespace,
                            item=item,
                            line=line_no,
                            offset=index.token_at(at),
                            text=_excerpt(line.rstrip("\r"), found.start(), found.end()),
                        )
                    )
                byte_pos += 1 + (len(line) if line.isascii() else len(line.encode("utf-8")))
        return matches, False

    # -- search --------------------------------------------------------------

    def query(self, query: str, namespaces: Collection[str] | None, top_k: int) -> list[Hit]:
        if top_k <= 0:
            raise InvalidArgumentError(f"top_k must be at least 1, not {top_k}")
        if not query.strip():
            raise InvalidArgumentError("query is empty: say what you are looking for")
        collection = self._get_collection()
        where: dict[str, Any] | None = None
        if namespaces is not None:
            if not namespaces:
                return []
            where = {"namespace": {"$in": sorted(namespaces)}}
        result = collection.query(
            query_texts=[query], n_results=top_k, where=where, include=["documents", "metadatas", "distances"]
        )
        hits: list[Hit] = []
        documents = (result.get("documents") or [[]])[0]
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        for doc, meta, distance in zip(documents, metadatas, distances, strict=True):
            if not (self._raw / str(meta["namespace"])).exists():
                continue  # deleted while its chunks were still being dropped
            hits.append(
                Hit(
                    namespace=str(meta["namespace"]),
                    item=int(meta["item"]),  # type: ignore[arg-type]
                    offset=int(meta["offset"]),  # type: ignore[arg-type]
                    score=round(1.0 - float(distance), 4),
                    text=doc or "",
                )
            )
        return hits

    def pending(self) -> set[str]:
        with self._pending_lock:
            return {ns for ns, count in self._pending.items() if count > 0}

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Block until the background indexer has caught up; for tests and benchmarks."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.pending() and not self._closed:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        self._closed = True
        self._queue.put(None)
        if self._worker is not None:
            self._worker.join(timeout=10)

    # -- indexing ------------------------------------------------------------

    def _get_collection(self) -> ChromaCollection:
        with self._collection_lock:
            if self._collection is None:
                self._collection = self._open_collection()
            return self._collection

    def _open_collection(self) -> ChromaCollection:
        import chromadb  # heavy: imported on first use, not at start-up
        from chromadb.config import Settings

        from offprompt.embedding import MiniLMEmbedding, chroma_embedding_function

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        name = collection_name(self._memory_name)
        if self._location.mode == "http":
            self._client = chromadb.HttpClient(host=self._location.url or "http://127.0.0.1:8000", settings=settings)
        elif self._location.mode == "ephemeral":
            # Ephemeral clients in one process share one store: keep each memory's collection apart.
            self._client = chromadb.EphemeralClient(settings=settings)
            name = f"{name}-{id(self)}"
        else:
            path = self._location.path or self._raw.parent / "chroma"
            self._client = chromadb.PersistentClient(path=str(path), settings=settings)
        self._embed = MiniLMEmbedding()
        collection: ChromaCollection = self._client.get_or_create_collection(
            name, embedding_function=chroma_embedding_function(), configuration={"hnsw": {"space": "cosine"}}
        )
        if self._tombstones.exists():
            for namespace in set(self._tombstones.read_text(encoding="utf-8").split()):
                collection.delete(where={"namespace": namespace})
            self._tombstones.unlink()
        return collection

    def _enqueue(self, namespace: str, item: int) -> None:
        with self._pending_lock:
            self._pending[namespace] = self._pending.get(namespace, 0) + 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._run_indexer, name="offprompt-indexer", daemon=True)
                self._worker.start()
        self._queue.put((namespace, item))

    def _run_indexer(self) -> None:
        while (job := self._queue.get()) is not None:
            namespace, item = job
            try:
                self._index(namespace, item)
            except Exception:
                logger.exception(
                    "indexing item %s of %s failed; it stays readable but is not searchable", item, namespace
                )
            finally:
                with self._pending_lock:
                    if namespace in self._pending:
                        self._pending[namespace] -= 1

    def _index(self, namespace: str, item: int) -> None:
        try:
            data = self._path(namespace, item, ".txt").read_bytes()
            index = TokenIndex.from_bytes(self._path(namespace, item, ".idx").read_bytes())
            kind = json.loads(self._path(namespace, item, ".json").read_bytes())["kind"]
        except FileNotFoundError:
            return  # deleted before its turn
        spans = chunking.chunk(data, index, kind)
        collection = self._get_collection()
        for first in range(0, len(spans), EMBED_BATCH):
            if self._closed:
                return
            batch = spans[first : first + EMBED_BATCH]
            documents = [data[a:b].decode("utf-8") for a, b in batch]
            embeddings = self._embed.embed(documents)  # outside the write lock: it is the slow part
            with self._write_lock:
                if not self._path(namespace, item, ".txt").exists():
                    return
                collection.upsert(
                    ids=[f"{namespace}:{item}:{first + i}" for i in range(len(batch))],
                    documents=documents,
                    embeddings=embeddings,
                    metadatas=[
                        {"namespace": namespace, "item": item, "chunk": first + i, "offset": index.token_at(a)}
                        for i, (a, _) in enumerate(batch)
                    ],
                )
        with self._write_lock:
            if self._path(namespace, item, ".txt").exists():
                write_atomically(self._path(namespace, item, ".indexed"), b"")


def _read_offset(f: Any, token: int) -> int:
    f.seek(token * _OFFSET_BYTES)
    return int.from_bytes(f.read(_OFFSET_BYTES), "little")


MAX_LINE_CHARS = 400


def _excerpt(line: str, start: int, end: int) -> str:
    """The line, or for a very long one (minified JSON, a base64 blob) the part around the match."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    margin = max((MAX_LINE_CHARS - (end - start)) // 2, 40)
    a, b = max(start - margin, 0), min(end + margin, len(line))
    return ("…" if a > 0 else "") + line[a:b] + ("…" if b < len(line) else "")
