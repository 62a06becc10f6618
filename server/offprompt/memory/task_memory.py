"""Task memory: stores a tool result's artifacts off the prompt and hands back a reference.

The dispatch table maps an artifact type to the storage that keeps it (text
and JSON to text storage, binaries to blob storage); adding a storage is one
line. A namespace holds every artifact of one tool result in order, text and
blobs together. The catalog records where each namespace came from.
"""

from __future__ import annotations

import builtins
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import mcp_types as mt
import platformdirs

from offprompt.artifacts import (
    KINDS,
    STRUCTURED,
    TEXT_KINDS,
    Artifact,
    BlobArtifact,
    JsonArtifact,
    ResourceLinkArtifact,
    TextArtifact,
    flatten,
    new_name,
)
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.catalog import Catalog, ItemRecord, NamespaceRecord
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.storage import (
    ChromaLocation,
    ChromaTextStorage,
    EmbeddingSpec,
    FileBlobStorage,
    MemoryBlobStorage,
)
from offprompt.memory.storage.base import Hit, LineMatch, SearchMode, Storage, TextStorage, Window
from offprompt.memory.storage.fusion import reciprocal_rank_fusion

logger = logging.getLogger(__name__)

REFERENCE_TEMPLATE = (
    'Output of "{tool}" was stored in memory with memory_name "{memory_name}" '
    'and artifact_namespace "{artifact_namespace}".'
)
URI_SCHEME = "memory"
#: With several phrasings, how deep each one's ranking goes before they are fused.
FUSION_DEPTH = 20


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("offprompt", appauthor=False))


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Where a memory lives and how long it keeps things."""

    name: str = "default"
    data_dir: Path = field(default_factory=default_data_dir)
    chroma: Literal["persistent", "ephemeral", "http"] = "persistent"
    chroma_url: str | None = None
    blobs: Literal["file", "memory"] = "file"
    ttl_seconds: float | None = 30 * 24 * 3600
    max_bytes: int | None = 2 * 1024**3
    #: The embedding function that builds the memory's vectors; the bundled offline MiniLM by default.
    embedding: EmbeddingSpec = field(default_factory=EmbeddingSpec)

    @property
    def directory(self) -> Path:
        return self.data_dir.expanduser() / self.name


@dataclass(frozen=True, slots=True)
class Reference:
    """What the model gets instead of a stored result."""

    memory_name: str
    record: NamespaceRecord
    preview: str = ""

    @property
    def namespace(self) -> str:
        return self.record.namespace

    @property
    def uri(self) -> str:
        return f"{URI_SCHEME}://{self.memory_name}/{self.namespace}"

    def summary(self) -> str:
        parts = []
        for item in self.record.items:
            if item.mime_type and item.tokens == 0:
                parts.append(f"item {item.item}: {item.kind} {item.mime_type}, {item.bytes:,} bytes")
            else:
                parts.append(f"item {item.item}: {item.kind}, {item.tokens:,} tokens")
        return "; ".join(parts)

    def to_result(self) -> mt.CallToolResult:
        text = REFERENCE_TEMPLATE.format(
            tool=self.record.tool, memory_name=self.memory_name, artifact_namespace=self.namespace
        )
        hint = (
            f"It holds {self.summary()}. Read it with memory_load (artifact_namespace, item, offset), "
            "or find the part you need with memory_query (by meaning) or memory_grep (by regex)."
        )
        content: list[mt.ContentBlock] = [mt.TextContent(text=f"{text}\n{hint}")]
        if self.preview:
            content.append(mt.TextContent(text=f"Preview of item 0:\n{self.preview}"))
        content.append(
            mt.ResourceLink(
                uri=self.uri,
                name=self.namespace,
                title=f"Output of {self.record.tool}",
                description=self.summary(),
                size=self.record.bytes,
            )
        )
        return mt.CallToolResult(content=content, _meta={"offprompt": self.meta()})

    def meta(self) -> dict[str, Any]:
        return {
            "memory_name": self.memory_name,
            "artifact_namespace": self.namespace,
            "tool": self.record.tool,
            "kinds": self.record.kinds,
            "tokens": self.record.tokens,
            "bytes": self.record.bytes,
        }


class TaskMemory:
    """Stores artifacts by namespace, reads them back by window, query, grep or whole."""

    def __init__(
        self,
        name: str,
        catalog: Catalog,
        text: TextStorage,
        blobs: Storage,
        *,
        ttl_seconds: float | None = None,
        max_bytes: int | None = None,
        lock: DirectoryLock | None = None,
    ) -> None:
        self.name = name
        self.catalog = catalog
        self.text = text
        self.storages: dict[type[Artifact], Storage] = {
            TextArtifact: text,
            JsonArtifact: text,
            ResourceLinkArtifact: text,
            BlobArtifact: blobs,
        }
        self.ttl_seconds = ttl_seconds
        self.max_bytes = max_bytes
        self._lock = lock

    @classmethod
    def open(cls, settings: MemorySettings) -> TaskMemory:
        """Open (or create) the memory in its directory, taking the directory's lock."""
        directory = settings.directory
        directory.mkdir(parents=True, exist_ok=True)
        lock = DirectoryLock(directory)
        lock.acquire()
        try:
            location = ChromaLocation(mode=settings.chroma, path=directory / "chroma", url=settings.chroma_url)
            blobs: Storage = FileBlobStorage(directory / "blobs") if settings.blobs == "file" else MemoryBlobStorage()
            memory = cls(
                settings.name,
                Catalog(directory / "catalog.sqlite3"),
                ChromaTextStorage(directory / "text", settings.name, location, settings.embedding),
                blobs,
                ttl_seconds=settings.ttl_seconds,
                max_bytes=settings.max_bytes,
                lock=lock,
            )
        except BaseException:
            lock.release()
            raise
        memory._drop_orphans()
        memory.expire()
        return memory

    def close(self) -> None:
        self.text.close()
        self.catalog.close()
        if self._lock is not None:
            self._lock.release()

    # -- storing ---------------------------------------------------------------

    def storage_for(self, artifact: Artifact) -> Storage:
        for cls in type(artifact).__mro__:
            if cls in self.storages:
                return self.storages[cls]
        raise TypeError(f"no storage for {type(artifact).__name__}")

    def store(
        self,
        artifacts: Sequence[Artifact],
        *,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        owner: str = "",
        preview_tokens: int = 0,
    ) -> Reference:
        """Store one tool result's artifacts under a fresh namespace and return its reference."""
        flat = flatten(artifacts)
        if not any(flat):
            raise InvalidArgumentError("nothing to store: the result is empty")
        namespace = new_name()
        items: list[ItemRecord] = []
        try:
            for position, artifact in enumerate(flat):
                meta = dict(artifact.meta)
                copy_of = _copy_of(artifact, flat[:position])
                if copy_of is not None:
                    # structuredContent that repeats a text block: kept (lossless) but not indexed or grepped twice.
                    meta[DUPLICATE_OF] = copy_of
                    stored = self.text.store(namespace, position, artifact, searchable=False)
                else:
                    stored = self.storage_for(artifact).store(namespace, position, artifact)
                items.append(
                    ItemRecord(
                        item=position,
                        kind=artifact.kind,
                        name=artifact.name,
                        mime_type=artifact.mime_type if isinstance(artifact, BlobArtifact) else None,
                        tokens=stored.tokens,
                        bytes=stored.bytes,
                        meta=meta,
                    )
                )
            now = time.time()
            record = NamespaceRecord(
                namespace=namespace,
                tool=tool,
                arguments=dict(arguments or {}),
                owner=owner,
                created=now,
                expires=now + self.ttl_seconds if self.ttl_seconds else None,
                items=tuple(items),
            )
            self.catalog.add(record)
        except BaseException:
            self._delete_payloads(namespace)
            raise
        self.expire(keep=namespace)
        preview = ""
        if preview_tokens > 0 and items and items[0].tokens:
            preview = self.window(namespace, 0, 0, preview_tokens).text
        return Reference(memory_name=self.name, record=record, preview=preview)

    # -- reading ---------------------------------------------------------------

    def get(self, namespace: str, owner: str | None = None) -> NamespaceRecord:
        record = self.catalog.get(namespace)
        if record is None or (owner is not None and record.owner != owner):
            raise NotFoundError(
                f'no artifact_namespace "{namespace}" in memory "{self.name}" (it may have expired or been '
                "deleted): call memory_list to see the stored namespaces"
            )
        return record

    def item(self, namespace: str, item: int, owner: str | None = None) -> ItemRecord:
        record = self.get(namespace, owner)
        if not 0 <= item < len(record.items):
            raise InvalidArgumentError(
                f'item {item} does not exist: namespace "{namespace}" holds items 0 to {len(record.items) - 1}'
            )
        return record.items[item]

    def load(self, namespace: str, item: int = 0, owner: str | None = None) -> Artifact:
        """The whole artifact stored as `item` of `namespace`."""
        found = self.item(namespace, item, owner)
        cls = KINDS[found.kind]
        payload = self.storages[_base_type(cls)].load(namespace, item)
        if issubclass(cls, BlobArtifact):
            return cls(value=payload, mime_type=found.mime_type or cls.mime_type, name=found.name, meta=found.meta)
        text = payload.decode("utf-8")
        if cls is ResourceLinkArtifact:
            return cls(value=found.meta.get("mcp", {}).get("uri", text), name=found.name, meta=found.meta)
        if cls is JsonArtifact:
            return JsonArtifact(value=json.loads(text), text=text, name=found.name, meta=found.meta)
        return cls(value=text, name=found.name, meta=found.meta)

    def window(self, namespace: str, item: int, offset: int, max_tokens: int, owner: str | None = None) -> Window:
        found = self.item(namespace, item, owner)
        if found.kind not in TEXT_KINDS:
            raise InvalidArgumentError(f"item {item} of {namespace!r} is {found.kind}, not text: load it whole")
        return self.text.window(namespace, item, offset, max_tokens)

    def query(
        self,
        query: str,
        namespace: str | None = None,
        top_k: int = 5,
        owner: str | None = None,
        mode: SearchMode = "hybrid",
        queries: Sequence[str] = (),
    ) -> tuple[list[Hit], list[str]]:
        """The best chunks for `query` in `mode` (hybrid, dense or lexical), and the namespaces in scope that
        are not yet fully indexed for it. With `queries` (more phrasings of the same need), each phrasing is
        ranked on its own and the rankings are fused by reciprocal rank."""
        scope = self._scope(namespace, owner)
        phrasings = list(dict.fromkeys(q for q in (query, *queries) if q.strip())) or [query]
        if len(phrasings) == 1:
            hits = self.text.query(phrasings[0], scope, top_k, mode)
        else:
            # Each ranking goes deeper than top_k, so that a chunk second-best for every phrasing still counts.
            depth = max(2 * top_k, FUSION_DEPTH)
            hits = reciprocal_rank_fusion([self.text.query(q, scope, depth, mode) for q in phrasings], top_k)
        pending = self.text.pending(mode)
        indexing = sorted(pending if scope is None else pending & set(scope))
        return hits, indexing

    def grep(
        self, pattern: str, namespace: str | None = None, max_matches: int = 50, owner: str | None = None
    ) -> tuple[list[LineMatch], bool]:
        records = [self.get(namespace, owner)] if namespace else self.catalog.newest(owner=owner)
        texts = [
            (r.namespace, i.item)
            for r in records
            for i in r.items
            if i.kind in TEXT_KINDS and DUPLICATE_OF not in i.meta
        ]
        return self.text.grep(pattern, texts, max_matches)

    def list(self, limit: int = 50, owner: str | None = None) -> list[NamespaceRecord]:
        if limit <= 0:
            raise InvalidArgumentError(f"limit must be at least 1, not {limit}")
        self.expire()
        return self.catalog.newest(limit, owner)

    def delete(self, namespace: str, owner: str | None = None) -> NamespaceRecord:
        record = self.get(namespace, owner)
        self.catalog.remove(namespace)
        self._delete_payloads(namespace)
        return record

    # -- housekeeping ------------------------------------------------------------

    def expire(self, keep: str | None = None) -> builtins.list[str]:
        """Drop namespaces past their TTL, then the oldest ones while the memory is over its quota."""
        dropped = [ns for ns in self.catalog.expired(time.time()) if ns != keep]
        for ns in dropped:
            self.catalog.remove(ns)
            self._delete_payloads(ns)
        if self.max_bytes is not None and self.catalog.total_bytes() > self.max_bytes:
            for record in reversed(self.catalog.newest()):
                if self.catalog.total_bytes() <= self.max_bytes:
                    break
                if record.namespace != keep:
                    self.delete(record.namespace)
                    dropped.append(record.namespace)
        if dropped:
            logger.info("expired %d namespaces from memory %r", len(dropped), self.name)
        return dropped

    def _scope(self, namespace: str | None, owner: str | None) -> builtins.list[str] | None:
        if namespace:
            return [self.get(namespace, owner).namespace]
        if owner is not None:
            return [r.namespace for r in self.catalog.newest(owner=owner)]
        return None

    def _delete_payloads(self, namespace: str) -> None:
        for storage in {id(s): s for s in self.storages.values()}.values():
            storage.delete(namespace)

    def _drop_orphans(self) -> None:
        """Payloads whose namespace never reached the catalog (a crash mid-store) are removed."""
        for storage in {id(s): s for s in self.storages.values()}.values():
            for namespace in storage.namespaces():
                if self.catalog.get(namespace) is None:
                    storage.delete(namespace)


DUPLICATE_OF = "offprompt_copy_of"
"""Item meta key: this item repeats an earlier one (the SDKs send structuredContent beside its text)."""


def _copy_of(artifact: Artifact, earlier: Sequence[Artifact]) -> int | None:
    """The earlier item a structuredContent artifact repeats, if it does: `{"result": text}`, or the same JSON."""
    if not (isinstance(artifact, JsonArtifact) and artifact.meta.get("mcp", {}).get("type") == STRUCTURED):
        return None
    value = artifact.value
    strings = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) else []
    for position, other in enumerate(earlier):
        if isinstance(other, JsonArtifact) and other.value == value:
            return position
        if type(other) is TextArtifact and other.value in strings:
            return position
    return None


def _base_type(cls: type[Artifact]) -> type[Artifact]:
    return BlobArtifact if issubclass(cls, BlobArtifact) else TextArtifact
