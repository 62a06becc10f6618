"""Task memory: stores a tool result's artifacts off the prompt and hands back a reference.

The dispatch table maps an artifact type to the storage that keeps it (text
and JSON to text storage, binaries to blob storage): storing a new artifact
type elsewhere is one line there. Which storages, indexes and catalog a memory
has is chosen by its settings in `backends.py` and `storage/registry.py`. A
namespace holds every artifact of one tool result in order, text and blobs
together. The catalog records where each namespace came from.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from offprompt import deadline
from offprompt.artifacts import (
    KINDS,
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
from offprompt.memory.answers import Answer, intent_passages, on_the_spot, with_lines
from offprompt.memory.backends import open_memory_parts
from offprompt.memory.catalog import (
    DUPLICATE_OF,
    Catalog,
    CatalogStore,
    Flow,
    ItemRecord,
    NamespaceRecord,
    Origin,
)
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.outline import Entry
from offprompt.memory.outline.passages import Passage
from offprompt.memory.quota import Quota, in_indexes
from offprompt.memory.records import Summary
from offprompt.memory.reference import Reference
from offprompt.memory.select import Selection, SelectLimits, Selector, Source
from offprompt.memory.selecting import json_source, records_made
from offprompt.memory.settings import MemorySettings, backend_choice
from offprompt.memory.storage import open_backends
from offprompt.memory.storage.base import Hit, LineMatch, SearchMode, Storage, TextStorage, Window
from offprompt.memory.storage.files import secure_and_sweep
from offprompt.memory.storage.fusion import keeping_words_first, reciprocal_rank_fusion
from offprompt.memory.storing import store_items
from offprompt.memory.usage import Usage
from offprompt.niceness import set_background
from offprompt.secrets import VAULT_FILE
from offprompt.secrets.vault import SecretStore, SecretVault

#: A listing's outputs, newest first, where each was passed, and the records of their texts by item.
Listing = tuple[list[NamespaceRecord], dict[str, list[Flow]], dict[str, list[tuple[int, Summary]]]]
logger = logging.getLogger(__name__)

#: With several phrasings, how deep each one's ranking goes before they are fused.
FUSION_DEPTH = 20


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
        #: The memory's expiry and quota: what goes when, and what it occupies on disk.
        self.quota = Quota(catalog, text, max_bytes)
        self._lock = lock
        #: The memory's own directory (set by `open`); the secrets table lives there. None: nowhere on disk.
        self.directory: Path | None = None
        #: Runs memory_select's jq expressions; its worker processes start on the first one.
        self.selector = Selector(select_limits)
        self.usage = Usage(catalog)
        #: memory_list's last reads by (limit, owner), with the `listing_state` they were read at.
        self.listings: dict[tuple[int, str | None], tuple[tuple[int, int], Listing]] = {}
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
        parts = open_memory_parts(backend_choice(settings, resume_indexing=resume_indexing))
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
        backends = open_backends(backend_choice(settings, readonly=True))
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
        try:
            items, outlines = store_items(self.text, self.storage_for, namespace, flat, outline_tokens)
            self.quota.check_fits(tool, sum(i.bytes for i in items))
            record = self._record(namespace, tool, arguments, owner, items)
            deadline.check()  # the last moment to stop: from here on the result is stored and listed
            self.catalog.add(record, origin)
        except BaseException:
            self._delete_payloads(namespace)
            raise
        self.expire(keep=namespace)
        return self._reference(record, outlines, preview_tokens, outline_tokens, intent)

    def _record(
        self, namespace: str, tool: str, arguments: Mapping[str, Any] | None, owner: str, items: list[ItemRecord]
    ) -> NamespaceRecord:
        """The catalog's row of a stored result: its items, and when it expires (the memory's TTL from now)."""
        now = time.time()
        return NamespaceRecord(
            namespace=namespace,
            tool=tool,
            arguments=dict(arguments or {}),
            owner=owner,
            created=now,
            expires=now + self.ttl_seconds if self.ttl_seconds else None,
            items=tuple(items),
        )

    def _reference(
        self,
        record: NamespaceRecord,
        outlines: Mapping[int, tuple[Entry, ...]],
        preview_tokens: int,
        outline_tokens: int,
        intent: str | None,
    ) -> Reference:
        """The reference to a result just stored: its preview, the first text's outline, the intent's passages."""
        namespace, items = record.namespace, record.items
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
            found = intent_passages(self.text, namespace, texts, intent)
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
        return json_source(self.text, record, item, self.item(record.namespace, item, None))

    def listing_state(self) -> tuple[int, int] | None:
        """What memory_list reads, as counts of the writes to it, while this process is its only writer and the
        quota is not due to be measured (a listing measures it); None: a listing must read."""
        catalog, records = self.catalog.write_count(), self.text.records_written()
        if catalog is None or records is None or (self.quota.max_bytes is not None and self.quota.due()):
            return None
        return catalog, records

    def records_made(self, records: Sequence[NamespaceRecord]) -> dict[str, list[tuple[int, Summary]]]:
        """The records each namespace's texts have so far, by item (not made here: a listing reads what is)."""
        return records_made(self.text, records)

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
            hits, by_words = with_lines(self.text, ranking.hits), ranking.by_words
            words_first = (ranking.lexical_first, ranking.lexical_window)
        else:
            # Each ranking goes deeper than top_k, so that a chunk second-best for every phrasing still counts.
            depth = max(2 * top_k, FUSION_DEPTH)
            rankings = [self.text.query(q, scope, depth, mode, wait=wait) for q in phrasings]
            # The question's own words, as the model wrote it.
            words_first = (rankings[0].lexical_first, rankings[0].lexical_window)
            fused = reciprocal_rank_fusion([r.hits for r in rankings], top_k)
            hits = with_lines(self.text, keeping_words_first(fused, words_first, top_k))
            by_words = next((r.by_words for r in rankings if r.by_words), "")

        def in_scope(names: set[str]) -> list[str]:
            return sorted(names if scope is None else names & set(scope))

        unchunked = in_scope(self.text.pending("lexical"))
        answered = {hit.namespace for hit in hits}
        missed = [ns for ns in in_scope(pending_before) if ns not in unchunked and ns not in answered]
        if unchunked or missed:
            # Not in the lexical index yet (a reference just handed out), or not when the search ran: their stored
            # text is ranked on the spot by its words, so a question right after a store always gets passages.
            spot = on_the_spot(self.text, self.catalog, " ".join(phrasings), [*unchunked, *missed], top_k)
            if spot:
                fused = reciprocal_rank_fusion([hits, spot], top_k) if hits else spot[:top_k]
                hits = with_lines(self.text, keeping_words_first(fused, words_first, top_k))
        return Answer(hits, in_scope(self.text.pending(mode)), by_words, unchunked, left_out)

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
        texts = [(r.namespace, i.item) for r in records if r.namespace not in hidden for i in r.items if in_indexes(i)]
        return self.text.grep(pattern, texts, max_matches)

    @property
    def max_bytes(self) -> int | None:
        """The quota: bytes the memory may occupy on disk (None: no limit)."""
        return self.quota.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int | None) -> None:
        self.quota.max_bytes = value
        self.quota.measured = -math.inf  # a new quota is checked on the next listing

    def recent(self, limit: int = 50, owner: str | None = None) -> list[NamespaceRecord]:
        """The newest namespaces (the caller's own, when `owner` is given), after dropping expired ones (and,
        if it was not measured in the last QUOTA_RECHECK_SECONDS, the oldest over the quota)."""
        if limit <= 0:
            raise InvalidArgumentError(f"limit must be at least 1, not {limit}")
        self.expire(quota=self.quota.due())
        return self.catalog.newest(limit, owner, whole_arguments=False)

    def delete(self, namespace: str, owner: str | None = None) -> NamespaceRecord:
        record = self.get(namespace, owner)
        self.catalog.remove(namespace)
        self._delete_payloads(namespace)
        return record

    # -- housekeeping ------------------------------------------------------------

    def expire(self, keep: str | None = None, *, quota: bool = True) -> list[str]:
        """Drop namespaces past their TTL, then (with `quota`) the oldest ones while the memory occupies more
        than its quota (see `Quota.expire`)."""
        if self.readonly:
            return []
        dropped = self.quota.expire(keep, quota=quota, delete=self.delete, delete_payloads=self._delete_payloads)
        if dropped:
            logger.info("expired %d namespaces from memory %r", len(dropped), self.name)
        return dropped

    def used_bytes(self) -> int:
        """What the memory occupies on disk: payloads, token indexes, the catalog and the search indexes."""
        return self.quota.used_bytes()

    def charges(self, records: Sequence[NamespaceRecord]) -> tuple[int, dict[str, int]]:
        """The bytes the memory occupies, and what dropping each namespace frees (see `Quota.charges`)."""
        return self.quota.charges(records)

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


def _json_size(text: str) -> int:
    """Bytes of `text` as a JSON string on the wire (UTF-8, escapes included)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))
