"""Task memory: stores a tool result's artifacts off the prompt and hands back a reference.

The dispatch table maps an artifact type to the storage that keeps it (text
and JSON to text storage, binaries to blob storage): storing a new artifact
type elsewhere is one line there. Which storages, indexes and catalog a memory
has is chosen by its settings in `backends.py` and `storage/registry.py`. A
namespace holds every artifact of one tool result in order, text and blobs
together. The catalog records where each namespace came from.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

import mcp_types as mt
import platformdirs

from offprompt import deadline
from offprompt.artifacts import (
    KINDS,
    STRUCTURED,
    TEXT_KINDS,
    Artifact,
    BlobArtifact,
    JsonArtifact,
    ResourceLinkArtifact,
    TextArtifact,
    base64_strings,
    flatten,
    new_name,
)
from offprompt.errors import InvalidArgumentError, NotFoundError, QuotaError
from offprompt.memory.backends import open_memory_parts
from offprompt.memory.catalog import (
    BINARY,
    DUPLICATE_OF,
    Catalog,
    CatalogStore,
    Flow,
    ItemRecord,
    NamespaceRecord,
    Origin,
)
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.outline import Entry, LineIndex, passages
from offprompt.memory.outline import view as outline_view
from offprompt.memory.outline.passages import Passage
from offprompt.memory.records import MAX_BYTES as RECORDS_MAX_BYTES
from offprompt.memory.records import Summary
from offprompt.memory.select import Selection, SelectLimits, Selector, Source
from offprompt.memory.storage import BackendChoice, EmbeddingSpec, drop_vectors, open_backends
from offprompt.memory.storage.base import Hit, LineMatch, SearchMode, Storage, TextStorage, Window
from offprompt.memory.storage.files import secure_and_sweep
from offprompt.memory.storage.fusion import LEXICAL_FIRST_WITHIN, kept_within, reciprocal_rank_fusion
from offprompt.memory.usage import Usage
from offprompt.niceness import BACKGROUND, set_background
from offprompt.secrets import VAULT_FILE
from offprompt.secrets.vault import SecretStore, SecretVault

logger = logging.getLogger(__name__)

REFERENCE_TEMPLATE = (
    'Output of "{tool}" was stored in memory with memory_name "{memory_name}" '
    'and artifact_namespace "{artifact_namespace}".'
)
URI_SCHEME = "memory"
#: A listing measures the quota (stat calls and a count of free pages in each index's file, most of what a
#: memory_list costs) at most this often; every store measures it, so growth by stores is caught at once and
#: the indexes' growth in the background within this long.
QUOTA_RECHECK_SECONDS: Final = 5.0
#: Every reference a model passes in a tool's argument starts with this (see `offprompt.arguments`).
MEMORY_MARK = "⟦memory:"


def memory_token(namespace: str, item: int = 0, option: str = "") -> str:
    """The reference a model puts in another tool's argument to hand it item `item` of `namespace` (`option`:
    `lines=A-B` or `select=<jq>`, the part to pass)."""
    return f"{MEMORY_MARK}{namespace}/{item}{' ' + option if option else ''}⟧"


#: The intent's passages in a reference: how many, and how many tokens they hold together.
INTENT_PASSAGES = 3
INTENT_TOKENS = 600
#: With several phrasings, how deep each one's ranking goes before they are fused.
FUSION_DEPTH = 20
#: A query about texts not yet in the lexical index ranks at most this many of their bytes on the spot, in
#: windows of about this many tokens (a chunk's size).
SPOT_BYTES = 8 * 1024 * 1024
SPOT_PASSAGE_TOKENS = 300


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("offprompt", appauthor=False))


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Where a memory lives and how long it keeps things."""

    name: str = "default"
    data_dir: Path = field(default_factory=default_data_dir)
    chroma: Literal["persistent", "ephemeral", "http"] = "persistent"
    chroma_url: str | None = None
    #: A shared memory's PostgreSQL (catalog, texts, lexical index, blobs, indexing queue); None: the embedded one.
    postgres: str | None = field(default=None, repr=False)  # may hold a password: never in a repr or a log
    #: Sent to the Chroma server with every request (http mode).
    chroma_token: str | None = field(default=None, repr=False)
    #: A shared memory: this server embeds texts (True), or only chunks them (False; `offprompt index` embeds).
    indexer: bool = True
    #: A shared memory: bytes of local copies of texts kept at most.
    cache_bytes: int = 512 * 1024**2
    #: A shared memory: the key of its secrets table in the database, the same on every server (None: each
    #: server resolves only the handles it gave, from the file in its directory).
    secrets_key: str | None = field(default=None, repr=False)
    blobs: Literal["file", "memory"] = "file"
    ttl_seconds: float | None = 30 * 24 * 3600
    max_bytes: int | None = 2 * 1024**3
    #: The embedding function that builds the memory's vectors; the bundled offline MiniLM by default.
    embedding: EmbeddingSpec = field(default_factory=EmbeddingSpec)
    #: The records of one text (a table's, a log's) take at most this many bytes of JSON, else are not kept.
    records_max_bytes: int = RECORDS_MAX_BYTES
    #: How far below the process's priority the embedder's threads run (set as the memory opens).
    embedder_niceness: int = BACKGROUND

    @property
    def directory(self) -> Path:
        return self.data_dir.expanduser() / self.name


@dataclass(frozen=True, slots=True)
class Reference:
    """What the model gets instead of a stored result: where it is, and, for a result that may be shown, the
    outline of its text and the passages that answer the caller's intent."""

    memory_name: str
    record: NamespaceRecord
    preview: str = ""
    outline: tuple[Entry, ...] = ()
    outline_item: int = 0
    #: How many tokens of the outline the text shows (0: no outline, in the text or in `_meta`).
    outline_tokens: int = 0
    intent: str = ""
    passages: tuple[tuple[int, Passage], ...] = ()  # (item, passage), best first

    @property
    def namespace(self) -> str:
        return self.record.namespace

    @property
    def distinct_tokens(self) -> int:
        """Tokens of the result counted once: an item that repeats another (structuredContent beside its text)
        is left out, as the model would read it once."""
        return sum(i.tokens for i in self.record.items if DUPLICATE_OF not in i.meta)

    @property
    def uri(self) -> str:
        return f"{URI_SCHEME}://{self.memory_name}/{self.namespace}"

    @property
    def token(self) -> str:
        """The reference to pass on: its first text item, else item 0."""
        return memory_token(self.namespace, self.record.first_text or 0)

    def summary(self) -> str:
        parts = []
        for item in self.record.items:
            if DUPLICATE_OF in item.meta:
                parts.append(f"item {item.item}: {item.kind}, a copy of item {item.meta[DUPLICATE_OF]}")
            elif BINARY in item.meta:
                parts.append(f"item {item.item}: {item.kind} holding base64 data, {item.bytes:,} bytes (not searched)")
            elif item.mime_type and item.tokens == 0:
                parts.append(f"item {item.item}: {item.kind} {item.mime_type}, {item.bytes:,} bytes")
            else:
                parts.append(f"item {item.item}: {item.kind}, {item.tokens:,} tokens")
        return "; ".join(parts)

    def to_result(self) -> mt.CallToolResult:
        text = REFERENCE_TEMPLATE.format(
            tool=self.record.tool, memory_name=self.memory_name, artifact_namespace=self.namespace
        )
        hint = (
            f"It holds {self.summary()}. Read it with memory_load (artifact_namespace, item, line or offset), "
            "or find the part you need with memory_query (by meaning) or memory_grep (by regex). "
            f"To pass it to another tool unread, put {self.token} in that tool's argument (a part: add "
            "lines=A-B or select=<jq> before the ⟧)."
        )
        content: list[mt.ContentBlock] = [mt.TextContent(text=f"{text}\n{hint}")]
        if self.preview:
            content.append(mt.TextContent(text=f"Preview of item 0:\n{self.preview}"))
        shown = self._outline_text()
        if shown:
            content.append(mt.TextContent(text=shown))
        if self.intent:
            content.append(mt.TextContent(text=self._passages_text()))
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

    def _outline_text(self) -> str:
        if not self.outline or self.outline_tokens <= 0:
            return ""
        lines, left = outline_view.bounded(self.outline, self.outline_tokens)
        head = f"Outline of item {self.outline_item} (L = lines; load one with memory_load line=...):"
        if left:
            more = (
                f'{outline_view.left_out(left)}: memory_outline(artifact_namespace="{self.namespace}", '
                f"item={self.outline_item})."
            )
            lines.append(more)
        return "\n".join([head, *lines])

    def _passages_text(self) -> str:
        if not self.passages:
            return f"No passage matches the words of the intent {self.intent!r}; try memory_query or the outline."
        parts = [f"Best passages for the intent {self.intent!r}:"]
        for rank, (item, p) in enumerate(self.passages, start=1):
            parts.append(f"[{rank}] item {item} lines {p.line}-{p.end_line} (offset {p.offset})\n{p.text}")
        return "\n".join(parts)

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "memory_name": self.memory_name,
            "artifact_namespace": self.namespace,
            "tool": self.record.tool,
            "kinds": self.record.kinds,
            "tokens": self.record.tokens,
            "bytes": self.record.bytes,
            "pass_as": self.token,
        }
        if self.outline and self.outline_tokens > 0:
            meta["outline"] = [e.to_dict() for e in self.outline]
            meta["outline_item"] = self.outline_item
        if self.intent:
            meta["intent"] = {
                "intent": self.intent,
                "passages": [
                    {
                        "item": item,
                        "line": p.line,
                        "end_line": p.end_line,
                        "offset": p.offset,
                        "score": p.score,
                        "text": p.text,
                    }
                    for item, p in self.passages
                ],
            }
        return meta


@dataclass(frozen=True, slots=True)
class Answer:
    """A query's hits; the namespaces in scope not yet searchable in the mode asked for; and, when the search by
    meaning was unreachable, why the hits are ranked by their words only."""

    hits: list[Hit]
    indexing: list[str]
    by_words: str = ""
    #: Of `indexing`, those not even searchable by their words yet.
    unchunked: list[str] = field(default_factory=list)
    #: The sensitive outputs a query across the memory left out (an `always` tool's: read only when named).
    left_out: list[str] = field(default_factory=list)


class TaskMemory:
    """Stores artifacts by namespace, reads them back by window, query, grep or whole."""

    def __init__(
        self,
        name: str,
        catalog: CatalogStore,
        text: TextStorage,
        blobs: Storage,
        *,
        ttl_seconds: float | None = None,
        max_bytes: int | None = None,
        lock: DirectoryLock | None = None,
        select_limits: SelectLimits | None = None,
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
        self._max_bytes = max_bytes
        self._quota_measured = -math.inf  # monotonic time the quota was last measured
        self._lock = lock
        #: The memory's own directory (set by `open`); the secrets table lives there. None: nowhere on disk.
        self.directory: Path | None = None
        #: Runs memory_select's jq expressions; its worker processes start on the first one.
        self.selector = Selector(select_limits)
        self.usage = Usage(catalog)
        self.readonly = False
        self._shared_secrets: Callable[[], SecretStore] | None = None

    def secret_store(self) -> SecretStore:
        """Where this memory's secret handles live: a shared memory's database when it has a `secrets_key`, else
        the file beside the catalog (or this process only, for a memory with no directory)."""
        if self._shared_secrets is not None:
            return self._shared_secrets()
        return SecretVault(None if self.directory is None else self.directory / VAULT_FILE)

    @classmethod
    def open(cls, settings: MemorySettings, *, tidy: bool = True, resume_indexing: bool = True) -> TaskMemory:
        """Open (or create) the memory in its directory, taking the directory's lock; with `tidy`, drop orphans
        and expired namespaces at once (`offprompt memory gc` does it itself, to report what it drops); with
        `resume_indexing`, index in the background what an earlier process left unindexed."""
        set_background(settings.embedder_niceness)  # before any embedder thread starts: each lowers itself once
        parts = open_memory_parts(_choice(settings, resume_indexing=resume_indexing))
        try:
            memory = cls(
                settings.name,
                parts.catalog,
                parts.text,
                parts.blobs,
                ttl_seconds=settings.ttl_seconds,
                max_bytes=settings.max_bytes,
                lock=parts.lock,
            )
        except BaseException:
            parts.abandon()
            raise
        memory.directory = settings.directory
        memory._shared_secrets = parts.shared_secrets
        if tidy:
            if parts.owns_payloads:  # in a shared memory, another server may be between a payload and its row
                memory._drop_orphans()
            memory.expire()
        return memory

    @classmethod
    def open_readonly(cls, settings: MemorySettings) -> TaskMemory:
        """The memory as it is on disk, for reading beside the server that holds it: no lock taken, nothing
        written (SQLite read-only), no Chroma (search by words only). A shared memory (PostgreSQL) is opened
        as it is, without indexing: servers use it at once anyway."""
        if settings.postgres is not None:
            return cls.open(settings, tidy=False, resume_indexing=False)
        directory = settings.directory
        if not (directory / "catalog.sqlite3").exists():
            raise NotFoundError(
                f'there is no memory "{settings.name}" in {settings.data_dir}: `offprompt memories` lists the ones '
                "there are (or pass the --data-dir a server uses)"
            )
        backends = open_backends(_choice(settings, readonly=True))
        memory = cls(
            settings.name,
            Catalog(directory / "catalog.sqlite3", readonly=True),
            backends.text,
            backends.blobs,
            ttl_seconds=settings.ttl_seconds,
            max_bytes=settings.max_bytes,
        )
        memory.readonly = True
        return memory

    def close(self, wait: float = 10) -> None:
        """Close; the indexing threads get `wait` seconds to finish their batch (what is left resumes at the next
        open: a stored text is durable before its reference is handed out)."""
        self.selector.close()
        if not self.readonly:
            self.usage.close()
        self.text.close(wait)
        self.catalog.close()
        if self._lock is not None:
            with contextlib.suppress(OSError):  # Chroma's files of this run get the private modes too
                secure_and_sweep(self._lock.path.parent)
            self._lock.release()

    # -- storing ---------------------------------------------------------------

    def storage_for(self, artifact: Artifact) -> Storage:
        return self.storage_for_type(type(artifact))

    def storage_for_type(self, kind: type[Artifact]) -> Storage:
        """The storage the dispatch table gives this artifact type (or its nearest base in the table)."""
        for cls in kind.__mro__:
            if cls in self.storages:
                return self.storages[cls]
        raise TypeError(f"no storage for {kind.__name__}")

    def store(
        self,
        artifacts: Sequence[Artifact],
        *,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        owner: str = "",
        preview_tokens: int = 0,
        outline_tokens: int = 0,
        intent: str | None = None,
        origin: Origin | None = None,
    ) -> Reference:
        """Store one tool result's artifacts under a fresh namespace and return its reference. `origin`: the
        server whose output it is and whether it is sensitive (who may receive it as a `⟦memory:…⟧` argument).

        The reference shows up to ``outline_tokens`` of the first text's outline (0: none) and, for an
        ``intent``, the passages that best answer it."""
        flat = flatten(artifacts)
        if not any(flat):
            raise InvalidArgumentError("nothing to store: the result is empty")
        namespace = new_name()
        items: list[ItemRecord] = []
        outlines: dict[int, tuple[Entry, ...]] = {}  # made while storing: not read back from where they were put
        try:
            for position, artifact in enumerate(flat):
                deadline.check()
                meta = dict(artifact.meta)
                copy_of = _copy_of(artifact, flat[:position])
                binary = copy_of is None and _mostly_base64(artifact)
                if copy_of is not None or binary:
                    # structuredContent that repeats a text block or an image, or JSON that is mostly base64: kept
                    # (lossless) but never indexed, grepped or embedded: base64 is not text to search.
                    meta[DUPLICATE_OF if copy_of is not None else BINARY] = copy_of if copy_of is not None else True
                    stored = self.text.store(namespace, position, artifact, searchable=False)
                elif (storage := self.storage_for(artifact)) is self.text:
                    # The outline is made now only if the reference shows it; else the indexer makes it.
                    stored = self.text.store(namespace, position, artifact, with_outline=outline_tokens > 0)
                else:
                    stored = storage.store(namespace, position, artifact)
                if stored.outline is not None:
                    outlines[position] = stored.outline
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
            size = sum(i.bytes for i in items)
            if self.max_bytes is not None and size > self.max_bytes:
                # Kept, it would evict every other output and then itself: a reference that dies. Refuse it now.
                raise QuotaError(
                    f"the result of {tool} is {size:,} bytes, more than this memory's whole quota (max_bytes "
                    f"{self.max_bytes:,}), so it was not stored. Raise max_bytes in the offprompt block of the "
                    'config file ("max_bytes": N) and call the tool again.'
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
            deadline.check()  # the last moment to stop: from here on the result is stored and listed
            self.catalog.add(record, origin)
        except BaseException:
            self._delete_payloads(namespace)
            raise
        self.expire(keep=namespace)
        preview = ""
        if preview_tokens > 0 and items and items[0].tokens:
            preview = self.window(namespace, 0, 0, preview_tokens).text
        texts = [i.item for i in items if i.kind in TEXT_KINDS and DUPLICATE_OF not in i.meta and i.tokens]
        entries: list[Entry] = []
        outline_item = 0
        if outline_tokens > 0:
            for position in texts:
                made = outlines.get(position)
                entries = list(made) if made is not None else self.text.outline(namespace, position)
                if entries:
                    outline_item = position
                    break
        found: list[tuple[int, Passage]] = []
        if intent and intent.strip():
            found = self._passages(namespace, texts, intent)
        return Reference(
            memory_name=self.name,
            record=record,
            preview=preview,
            outline=tuple(entries),
            outline_item=outline_item,
            outline_tokens=outline_tokens,
            intent=intent.strip() if intent else "",
            passages=tuple(found),
        )

    def _passages(self, namespace: str, texts: Sequence[int], intent: str) -> list[tuple[int, Passage]]:
        """The best passages for ``intent`` over the namespace's texts, read straight from the stored text:
        the indexes are still being built."""
        found: list[tuple[int, Passage]] = []
        per_passage = INTENT_TOKENS // INTENT_PASSAGES
        for position in texts:
            found += [(position, p) for p in self._best(namespace, position, intent, INTENT_PASSAGES, per_passage)]
        found.sort(key=lambda x: -x[1].score)
        return found[:INTENT_PASSAGES]

    def _best(self, namespace: str, item: int, query: str, top: int, max_tokens: int) -> list[Passage]:
        """The best passages of one stored text for `query`'s words, read straight from the stored text."""
        data = self.text.load(namespace, item)
        return passages.best(data, query, self.text.token_index(namespace, item), LineIndex.of(data), top, max_tokens)

    # -- reading ---------------------------------------------------------------

    def get(self, namespace: str, owner: str | None = None) -> NamespaceRecord:
        record = self.catalog.get(namespace)
        if record is None or (owner is not None and record.owner != owner):
            raise NotFoundError(
                f'no artifact_namespace "{namespace}" in memory "{self.name}" (it may have expired or been '
                "deleted): call memory_list to see the stored namespaces"
            )
        return record

    def origin(self, namespace: str) -> Origin | None:
        """The server whose output `namespace` is, and whether it is sensitive; None when stored without one."""
        return self.catalog.origin(namespace)

    def record_flows(self, rows: Sequence[tuple[str, Flow]]) -> None:
        """Note that these namespaces were passed to a tool (provenance, shown by memory_list)."""
        if rows:
            self.catalog.add_flows(rows)

    def flows(self, namespaces: Sequence[str]) -> dict[str, list[Flow]]:
        return self.catalog.flows(namespaces) if namespaces else {}

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
        payload = self.storage_for_type(cls).load(namespace, item)
        if issubclass(cls, BlobArtifact):
            return cls(value=payload, mime_type=found.mime_type or cls.mime_type, name=found.name, meta=found.meta)
        text = payload.decode("utf-8")
        if cls is ResourceLinkArtifact:
            return cls(value=found.meta.get("mcp", {}).get("uri", text), name=found.name, meta=found.meta)
        if cls is JsonArtifact:
            return JsonArtifact(value=json.loads(text), text=text, name=found.name, meta=found.meta)
        return cls(value=text, name=found.name, meta=found.meta)

    def payload(self, namespace: str, item: int = 0, owner: str | None = None) -> bytes:
        """The bytes stored as `item` of `namespace`: a text's UTF-8 as it came, a binary's own bytes."""
        found = self.item(namespace, item, owner)
        return self.storage_for_type(KINDS[found.kind]).load(namespace, item)

    def window(self, namespace: str, item: int, offset: int, max_tokens: int, owner: str | None = None) -> Window:
        self._text_item(namespace, item, owner)
        return self.text.window(namespace, item, offset, max_tokens)

    def window_at_line(self, namespace: str, item: int, line: int, max_tokens: int, owner: str | None = None) -> Window:
        """Up to ``max_tokens`` of a stored text from the start of its 1-based ``line``."""
        self._text_item(namespace, item, owner)
        return self.text.window_at_line(namespace, item, line, max_tokens)

    def outline(self, namespace: str, item: int = 0, owner: str | None = None) -> list[Entry]:
        """The outline of a stored text: its definitions, headings, JSON schema, log summary or paragraphs."""
        self._text_item(namespace, item, owner)
        return self.text.outline(namespace, item)

    def _text_item(self, namespace: str, item: int, owner: str | None) -> ItemRecord:
        found = self.item(namespace, item, owner)
        if found.kind not in TEXT_KINDS:
            raise InvalidArgumentError(f"item {item} of {namespace!r} is {found.kind}, not text: load it whole")
        return found

    def select(
        self,
        namespace: str,
        expression: str,
        item: int = 0,
        owner: str | None = None,
        joined: Sequence[str] = (),
    ) -> Selection:
        """The jq `expression` over the JSON of `item` of `namespace` (a text that is a table or a log: over its
        records, an array); each namespace in `joined` is bound to `$ns_<namespace>` and `$ns[i]` (its first JSON
        item, else item 0)."""
        sources = [self._json_source(self.get(namespace, owner), item)]
        for other in joined:
            record = self.get(other, owner)
            first_json = next((i.item for i in record.items if i.kind == "json"), 0)
            sources.append(self._json_source(record, first_json))
        return self.selector.select(expression, sources, [f"ns_{other}" for other in joined])

    def _json_source(self, record: NamespaceRecord, item: int) -> Source:
        found = self.item(record.namespace, item, None)
        label = f"item {item} of {record.namespace!r} ({found.kind})"
        json_items = [str(i.item) for i in record.items if i.kind == "json" and i.item != item]
        where = f" Its JSON is in item {', '.join(json_items)}." if json_items else ""
        if found.kind not in TEXT_KINDS:
            raise InvalidArgumentError(
                f"{label} is {found.mime_type or found.kind}, not JSON: memory_select reads JSON text, "
                f"structuredContent, JSON resources and JSON Lines.{where} Load this item with memory_load."
            )

        if found.kind == "text" and DUPLICATE_OF not in found.meta and BINARY not in found.meta:
            records = self._records_source(record.namespace, item, label)
            if records is not None:
                return records

        def read() -> bytes:
            return self.storages[TextArtifact].load(record.namespace, item)

        return Source(key=f"{record.namespace}/{item}", kind=found.kind, label=label, read=read, hint=where)

    def _records_source(self, namespace: str, item: int, label: str) -> Source | None:
        """A text that is a table or a stream of records is selected over its records (made now if the indexer
        has not made them yet); None for other text."""
        summary = self.text.records(namespace, item)
        if summary is None:
            return None
        if summary.skipped:
            raise InvalidArgumentError(
                f"{label} has {summary.count:,} {summary.what}, not kept: {summary.skipped}. "
                "Read it with memory_load or memory_grep."
            )

        def read() -> bytes:
            data = self.text.records_data(namespace, item)
            if data is None:
                raise NotFoundError(f"the records of {label} are gone (it was deleted meanwhile)")
            return data

        return Source(key=f"{namespace}/{item}/records", kind="json", label=f"the records of {label}", read=read)

    def records_made(self, records: Sequence[NamespaceRecord]) -> dict[str, list[tuple[int, Summary]]]:
        """The records each namespace's texts have so far, by item (not made here: a listing reads what is)."""
        found: dict[str, list[tuple[int, Summary]]] = {}
        for record in records:
            for item in record.items:
                if item.kind != "text" or DUPLICATE_OF in item.meta or BINARY in item.meta:
                    continue
                with contextlib.suppress(NotFoundError):
                    summary = self.text.records(record.namespace, item.item, make=False)
                    if summary is not None:
                        found.setdefault(record.namespace, []).append((item.item, summary))
        return found

    def window_within(
        self, namespace: str, item: int, offset: int, max_tokens: int, max_bytes: int, owner: str | None = None
    ) -> Window:
        """The token window at `offset` of at most `max_tokens` tokens whose text, written as a JSON string, is
        at most `max_bytes` bytes (never less than one token): what one answer can carry."""
        window = self.window(namespace, item, offset, max_tokens, owner)
        if _json_size(window.text) <= max_bytes:
            return window
        index = self.text.token_index(namespace, item)
        budget = max_bytes
        while True:
            start = int(index.offsets[offset])
            end = min(max(index.token_at(start + budget), offset + 1), offset + max_tokens)
            window = self.text.window(namespace, item, offset, end - offset)
            if _json_size(window.text) <= max_bytes or end == offset + 1:
                return window
            budget //= 2  # escapes (\n, \", \u0001) made it longer than its bytes

    def query(
        self,
        query: str,
        namespace: str | None = None,
        top_k: int = 5,
        owner: str | None = None,
        mode: SearchMode = "hybrid",
        queries: Sequence[str] = (),
        *,
        include_sensitive: bool = False,
    ) -> tuple[list[Hit], list[str]]:
        """The best chunks for `query` in `mode` (hybrid, dense or lexical), and the namespaces in scope that
        are not yet fully indexed for it. With `queries` (more phrasings of the same need), each phrasing is
        ranked on its own and the rankings are fused by reciprocal rank."""
        found = self.search(query, namespace, top_k, owner, mode, queries, include_sensitive=include_sensitive)
        return found.hits, found.indexing

    def search(
        self,
        query: str,
        namespace: str | None = None,
        top_k: int = 5,
        owner: str | None = None,
        mode: SearchMode = "hybrid",
        queries: Sequence[str] = (),
        *,
        include_sensitive: bool = False,
    ) -> Answer:
        """`query`'s answer with what the model must know beside the hits (see :class:`Answer`).

        A query about one namespace, or over the caller's own (an `owner`'s), waits briefly for them to reach
        the lexical index (their references were just handed out); one over the whole memory never waits on the
        writes of others: it answers with what is indexed and names what is not yet. One that names no namespace
        leaves the sensitive outputs out unless `include_sensitive` (the command line's, not the model's)."""
        left_out = [] if include_sensitive else self.sensitive_left_out(namespace, owner)
        scope = self._scope(namespace, owner, left_out)
        wait = namespace is not None or owner is not None
        # Before the query: a text that reaches the lexical index after the search ran, but before the check
        # below, was searched while missing and is no longer pending (a machine under load makes that likely).
        pending_before = self.text.pending("lexical")
        phrasings = list(dict.fromkeys(q for q in (query, *queries) if q.strip())) or [query]
        if len(phrasings) == 1:
            ranking = self.text.query(phrasings[0], scope, top_k, mode, wait=wait)
            hits, by_words, words_first = self._with_lines(ranking.hits), ranking.by_words, ranking.lexical_first
        else:
            # Each ranking goes deeper than top_k, so that a chunk second-best for every phrasing still counts.
            depth = max(2 * top_k, FUSION_DEPTH)
            rankings = [self.text.query(q, scope, depth, mode, wait=wait) for q in phrasings]
            words_first = rankings[0].lexical_first  # the question's own words, as the model wrote it
            fused = reciprocal_rank_fusion([r.hits for r in rankings], top_k)
            hits = self._with_lines(kept_within(fused, words_first if top_k >= LEXICAL_FIRST_WITHIN else None))
            by_words = next((r.by_words for r in rankings if r.by_words), "")

        def in_scope(names: set[str]) -> list[str]:
            return sorted(names if scope is None else names & set(scope))

        unchunked = in_scope(self.text.pending("lexical"))
        answered = {hit.namespace for hit in hits}
        missed = [ns for ns in in_scope(pending_before) if ns not in unchunked and ns not in answered]
        if unchunked or missed:
            # Not in the lexical index yet (a reference just handed out), or not when the search ran: their stored
            # text is ranked on the spot by its words, so a question right after a store always gets passages.
            spot = self._on_the_spot(" ".join(phrasings), [*unchunked, *missed], top_k)
            if spot:
                fused = reciprocal_rank_fusion([hits, spot], top_k) if hits else spot[:top_k]
                hits = self._with_lines(kept_within(fused, words_first if top_k >= LEXICAL_FIRST_WITHIN else None))
        return Answer(hits, in_scope(self.text.pending(mode)), by_words, unchunked, left_out)

    def _on_the_spot(self, query: str, namespaces: Sequence[str], top_k: int) -> list[Hit]:
        """The best windows of these namespaces' stored texts for `query`'s words (BM25 over overlapping windows,
        read straight from the stored text), best first; at most SPOT_BYTES of text are read."""
        found: list[Hit] = []
        budget = SPOT_BYTES
        records = [r for r in (self.catalog.get(ns) for ns in namespaces) if r is not None]  # deleted meanwhile
        for record in sorted(records, key=lambda r: -r.created):  # the newest first: its reference just went out
            for item in record.items:
                if item.kind not in TEXT_KINDS or DUPLICATE_OF in item.meta or BINARY in item.meta or not item.tokens:
                    continue
                if item.bytes > budget:
                    continue  # a smaller text may still fit
                budget -= item.bytes
                try:
                    best = self._best(record.namespace, item.item, query, top_k, SPOT_PASSAGE_TOKENS)
                except NotFoundError:
                    continue  # deleted while this query ran
                found += [Hit(record.namespace, item.item, p.offset, p.score, p.text, p.start, p.line) for p in best]
        return sorted(found, key=lambda h: -h.score)

    def _with_lines(self, hits: list[Hit]) -> list[Hit]:
        """Hits with the line each starts in (one read of each text that has hits)."""
        lines: dict[tuple[str, int], LineIndex] = {}
        out = []
        for hit in hits:
            key = (hit.namespace, hit.item)
            try:
                index = lines.get(key) or lines.setdefault(key, self.text.lines(*key))
            except NotFoundError:
                out.append(hit)  # deleted meanwhile
                continue
            start = hit.start if hit.start >= 0 else int(self.text.token_index(*key).offsets[hit.offset])
            out.append(replace(hit, line=index.line_at(start)))
        return out

    def grep(
        self,
        pattern: str,
        namespace: str | None = None,
        max_matches: int = 50,
        owner: str | None = None,
        *,
        include_sensitive: bool = False,
    ) -> tuple[list[LineMatch], bool]:
        """The lines that match `pattern`; across the memory (no namespace named), the sensitive outputs are left
        out unless `include_sensitive` (see `sensitive_left_out`)."""
        records = [self.get(namespace, owner)] if namespace else self.catalog.newest(owner=owner, whole_arguments=False)
        hidden = set() if include_sensitive or namespace else self.catalog.sensitive()
        texts = [(r.namespace, i.item) for r in records if r.namespace not in hidden for i in r.items if _indexed(i)]
        return self.text.grep(pattern, texts, max_matches)

    @property
    def max_bytes(self) -> int | None:
        """The quota: bytes the memory may occupy on disk (None: no limit)."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int | None) -> None:
        self._max_bytes = value
        self._quota_measured = -math.inf  # a new quota is checked on the next listing

    def recent(self, limit: int = 50, owner: str | None = None) -> list[NamespaceRecord]:
        """The newest namespaces (the caller's own, when `owner` is given), after dropping expired ones (and,
        if it was not measured in the last QUOTA_RECHECK_SECONDS, the oldest over the quota)."""
        if limit <= 0:
            raise InvalidArgumentError(f"limit must be at least 1, not {limit}")
        self.expire(quota=time.monotonic() - self._quota_measured >= QUOTA_RECHECK_SECONDS)
        return self.catalog.newest(limit, owner, whole_arguments=False)

    def delete(self, namespace: str, owner: str | None = None) -> NamespaceRecord:
        record = self.get(namespace, owner)
        self.catalog.remove(namespace)
        self._delete_payloads(namespace)
        return record

    # -- housekeeping ------------------------------------------------------------

    def expire(self, keep: str | None = None, *, quota: bool = True) -> list[str]:
        """Drop namespaces past their TTL, then (with `quota`) the oldest ones while the memory occupies more
        than its quota.

        The newest namespace (and `keep`) is never dropped for the quota: its reference was just handed out.
        """
        if self.readonly:
            return []
        dropped = [ns for ns in self.catalog.expired(time.time()) if ns != keep]
        for ns in dropped:
            self.catalog.remove(ns)
            self._delete_payloads(ns)
        if quota:
            self._quota_measured = time.monotonic()
        if quota and self.max_bytes is not None and self.used_bytes() > self.max_bytes:
            self._reclaim()
            # The indexes give back less than their share at once (Chroma keeps deleted slots for reuse), so
            # measure again after each round until the memory fits or only the protected are left.
            while (used := self.used_bytes()) > self.max_bytes:
                records = self.catalog.newest(whole_arguments=False)
                _, charges = self.charges(records)
                protected = {keep, records[0].namespace} if records else {keep}
                evictable = [r for r in reversed(records) if r.namespace not in protected]
                if not evictable:
                    break
                for record in evictable:
                    with contextlib.suppress(NotFoundError):  # a server sharing the memory evicted it first
                        self.delete(record.namespace)
                    dropped.append(record.namespace)
                    used -= charges[record.namespace]
                    if used <= self.max_bytes:
                        break
                self._reclaim()
        if dropped:
            logger.info("expired %d namespaces from memory %r", len(dropped), self.name)
        return dropped

    def _reclaim(self) -> None:
        self.text.reclaim()
        self.catalog.reclaim()

    def used_bytes(self) -> int:
        """What the memory occupies on disk: payloads, token indexes, the catalog and the search indexes."""
        return self.catalog.stored_bytes(TEXT_KINDS) + self.catalog.used_bytes() + self.text.index_bytes()

    def charges(self, records: Sequence[NamespaceRecord]) -> tuple[int, dict[str, int]]:
        """The bytes the memory occupies, and what dropping each namespace frees: its own files plus a share of
        the search indexes in proportion to its indexed text (what is not indexed is charged none)."""
        own = {r.namespace: sum(_own_bytes(i) for i in r.items) for r in records}
        indexed = {r.namespace: sum(i.bytes for i in r.items if _indexed(i)) for r in records}
        index = self.text.index_bytes()
        all_indexed = sum(indexed.values())
        charges = {ns: own[ns] + (index * indexed[ns] // all_indexed if all_indexed else 0) for ns in own}
        return sum(own.values()) + index + self.catalog.used_bytes(), charges

    def sensitive_left_out(self, namespace: str | None, owner: str | None = None) -> list[str]:
        """The sensitive outputs (an `always` tool's) a query or grep that names no namespace leaves out, newest
        first: such an output is read only by a call that names it."""
        if namespace:
            return []
        sensitive = self.catalog.sensitive()
        if not sensitive:
            return []
        records = self.catalog.newest(owner=owner, whole_arguments=False)
        return [r.namespace for r in records if r.namespace in sensitive]

    def _scope(self, namespace: str | None, owner: str | None, left_out: Collection[str] = ()) -> list[str] | None:
        if namespace:
            return [self.get(namespace, owner).namespace]
        if owner is not None or left_out:
            hidden = set(left_out)
            records = self.catalog.newest(owner=owner, whole_arguments=False)
            return [r.namespace for r in records if r.namespace not in hidden]
        return None

    def _delete_payloads(self, namespace: str) -> None:
        for storage in {id(s): s for s in self.storages.values()}.values():
            storage.delete(namespace)

    def _drop_orphans(self, progress: Progress | None = None) -> list[str]:
        """Payloads whose namespace never reached the catalog (a crash mid-store) are removed."""
        dropped: list[str] = []
        for storage in {id(s): s for s in self.storages.values()}.values():
            orphans = [ns for ns in sorted(storage.namespaces()) if self.catalog.get(ns) is None]
            for done, namespace in enumerate(orphans, start=1):
                storage.delete(namespace)
                dropped.append(namespace)
                if progress is not None:
                    progress("orphans", done, len(orphans))
        return dropped

    def gc(self, progress: Progress | None = None) -> dict[str, list[str]]:
        """Drop orphaned payloads, expired namespaces (and the oldest over the quota), and temporary files that
        an interrupted write left; what was dropped, by reason."""
        orphans = self._drop_orphans(progress)
        expired = [ns for ns in self.catalog.expired(time.time())]
        for done, ns in enumerate(expired, start=1):
            self.delete(ns)
            if progress is not None:
                progress("expired", done, len(expired))
        over_quota = self.expire()
        own = f".{os.getpid()}."  # this process's indexers may be writing theirs
        leftovers = [str(p) for p in self._directory_files("**/.*.tmp") if own not in p.name]
        for path in leftovers:
            Path(path).unlink(missing_ok=True)
        return {"orphans": orphans, "expired": expired + over_quota, "leftovers": leftovers}

    def _directory_files(self, pattern: str) -> list[Path]:
        return sorted(self._lock.path.parent.glob(pattern)) if self._lock is not None else []


Progress = Callable[[str, int, int], None]
"""Told (step, done, total) as long work goes on."""


def drop_remote_vectors(settings: MemorySettings) -> None:
    """Delete the memory's vectors on a Chroma server, if it keeps them there (before its directory goes); raises
    if the server can't be reached."""
    drop_vectors(_choice(settings, readonly=True))


def _choice(settings: MemorySettings, *, readonly: bool = False, resume_indexing: bool = True) -> BackendChoice:
    return BackendChoice(
        directory=settings.directory,
        memory_name=settings.name,
        blobs=settings.blobs,
        vectors=settings.chroma,
        vectors_url=settings.chroma_url,
        postgres=settings.postgres,
        vectors_token=settings.chroma_token,
        embedding=settings.embedding,
        readonly=readonly,
        resume_indexing=resume_indexing,
        embed=settings.indexer,
        cache_bytes=settings.cache_bytes,
        secrets_key=settings.secrets_key,
        records_max_bytes=settings.records_max_bytes,
    )


def _copy_of(artifact: Artifact, earlier: Sequence[Artifact]) -> int | None:
    """The earlier item a structuredContent artifact repeats, if it does: `{"result": text}`, or the same JSON."""
    if not (isinstance(artifact, JsonArtifact) and artifact.meta.get("mcp", {}).get("type") == STRUCTURED):
        return None
    value = artifact.value
    strings = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) else []
    payloads = base64_strings(value)
    for position, other in enumerate(earlier):
        if isinstance(other, JsonArtifact) and other.value == value:
            return position
        if type(other) is TextArtifact and other.value in strings:
            return position
        if isinstance(other, JsonArtifact) and other.text in strings:  # a JSON text, quoted whole as a string
            return position
    if payloads and _mostly_base64(artifact):
        # `{"content": [{"type": "image", "data": …}]}` beside the image block itself (server-filesystem's
        # read_media_file): a copy of the blob items, once they are all there.
        blobs = {
            base64.b64encode(o.value).decode("ascii"): p for p, o in enumerate(earlier) if isinstance(o, BlobArtifact)
        }
        if all(p.replace("\n", "") in blobs for p in payloads):
            return blobs[payloads[0].replace("\n", "")]
    return None


def _mostly_base64(artifact: Artifact) -> bool:
    """A JSON item whose text is mostly long base64 strings: a binary payload in JSON clothing."""
    if not isinstance(artifact, JsonArtifact):
        return False
    payloads = base64_strings(artifact.value)
    return bool(payloads) and sum(map(len, payloads)) >= 0.9 * len(artifact.text)


def _json_size(text: str) -> int:
    """Bytes of `text` as a JSON string on the wire (UTF-8, escapes included)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def _indexed(item: ItemRecord) -> bool:
    return item.kind in TEXT_KINDS and DUPLICATE_OF not in item.meta and BINARY not in item.meta


def _own_bytes(item: ItemRecord) -> int:
    return item.bytes + (4 * (item.tokens + 1) if item.kind in TEXT_KINDS else 0)
