"""Text storage: the exact text on disk; its chunks in a lexical index (SQLite FTS5) and a dense one (Chroma).

`store` writes the raw UTF-8 bytes and a token index (each token's byte
offset) before it returns, so a reference is never handed out for text that
could be lost, and it does nothing slower. Two background threads index it:
the chunker cuts it along its structure (:mod:`offprompt.memory.chunking`) and writes
the chunks with their terms to the lexical index (about half a second for
1 MB; the embedder waits meanwhile); the embedder then embeds them into Chroma
(about a minute for 1 MB on two cores). A query waits briefly for the chunker on the namespaces it searches,
so a just-stored result is found by its words at once; until the embedder is
done too, `pending()` names the namespace.

Reads (windows, lines, outlines, grep) go through `local_texts.LocalTexts`, queries through
`text_query.TextSearch`: the shared memory's storage (`pg_text.py`) composes the same two.

Layout under `root`: raw/{namespace}/{item}.txt .idx (uint32 token offsets)
.lines (uint32 line starts, then the size) .json (kind, hint) .outline.json (the outline, made at store
time when the reference shows it, else by the chunker or the first read of it) .records and .records.json (a
table's or a log's records and their summary, made by the chunker or the first memory_select) .embedded (marker);
.embedding (the chunks embedded so far, while it is being embedded); lexical.sqlite3; chroma/ for a persistent
collection; deleted.txt (namespaces to drop from Chroma when it
opens).
"""

from __future__ import annotations

import atexit
import json
import logging
import queue
import shutil
import threading
import time
import weakref
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from offprompt import deadline
from offprompt.artifacts import Artifact
from offprompt.errors import CredentialsRefusedError, NotFoundError
from offprompt.memory import chunking, outline
from offprompt.memory.outline import Entry, LineIndex
from offprompt.memory.records import MAX_BYTES as RECORDS_MAX_BYTES
from offprompt.memory.records import Summary
from offprompt.memory.storage.base import IndexState, LineMatch, Ranking, SearchMode, StoredItem, Window
from offprompt.memory.storage.dense import ChromaDenseIndex, ChromaLocation, EmbeddingSpec, collection_name
from offprompt.memory.storage.files import private_dir, write_atomically
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.indexing import (
    EMBED_BATCH,
    EMBED_SLICE,
    EmbedQueue,
    IndexJob,
    chunk_item,
    lower_priority,
    source_hint,
    window_item,
)
from offprompt.memory.storage.local_texts import LocalTexts, OnDisk, searchable
from offprompt.memory.storage.text_query import PERMANENT_FAILURES, TextSearch, describe_failure
from offprompt.tokens import TokenIndex, index_tokens, well_formed

__all__ = ["ChromaLocation", "EmbeddingSpec", "IndexState", "IndexedTextStorage", "collection_name", "searchable"]

logger = logging.getLogger(__name__)

#: How long the embedder yields, between two batches, to a stored text waiting for the chunker.
EMBEDDER_YIELD_SECONDS: Final = 10.0
#: With the dense index unreachable (a Chroma server down, the embedding function failing), the embedder keeps
#: its texts and tries again after this long, doubling up to the cap: they are embedded once it is back.
RETRY_FIRST_SECONDS: Final = 1.0
RETRY_MAX_SECONDS: Final = 30.0


class IndexedTextStorage:
    """Lossless text on disk, with a lexical and a dense index of its chunks built in the background.

    The indexes come from outside (`registry.py` builds them from the settings): SQLite FTS5 and Chroma here.
    A `readonly` one (the command line beside the server that holds the memory) reads the files and the
    lexical index as they are, and searches by words only.
    """

    def __init__(
        self,
        root: Path,
        lexical: LexicalIndex,
        dense: DenseIndex,
        *,
        readonly: bool = False,
        resume: bool = True,
        records_max_bytes: int = RECORDS_MAX_BYTES,
    ) -> None:
        self._raw = root / "raw"
        self.readonly = readonly
        if not readonly:
            private_dir(self._raw)
        self._lexical = lexical
        self._dense = dense
        self._write_lock = threading.Lock()  # orders deletes against the indexers' writes
        self._texts = LocalTexts(
            self._raw, OnDisk(self._raw), self._write_lock, readonly=readonly, records_max_bytes=records_max_bytes
        )
        self._search = TextSearch(
            lexical, dense, self._texts, self.wait_chunked, self._dense_answered, readonly=readonly
        )
        self._state = threading.Condition()  # guards the pending counts below
        self._pending_lexical: dict[str, int] = {}
        self._pending_dense: dict[str, int] = {}
        self._pending_windows = 0  # texts chunked by an earlier version, whose windows are being made
        self._chunk_queue: queue.Queue[IndexJob | None] = queue.Queue()
        self._embed_queue = EmbedQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        #: Wakes the embedder from its back-off: at close, or when a query reached the dense index again.
        self._retry = threading.Event()
        self._outage = False  # the embedder is waiting for the dense index to come back
        # A read-only view (the command line beside a server), or a short-lived one that only searches, uses the
        # indexes as they are rather than finish an earlier process's indexing.
        if not readonly and resume:
            self._recover()

    def _recover(self) -> None:
        """Finish the indexing that an earlier process left undone, and forget chunks of deleted texts."""
        stored = self.namespaces()
        for namespace in self._lexical.namespaces() - stored:
            self._lexical.delete(namespace)
        chunked = self._lexical.indexed()
        windowed = self._lexical.windowed()
        for sidecar in self._sidecars():
            if not json.loads(sidecar.read_bytes()).get("searchable", True):
                continue
            job = IndexJob(sidecar.parent.name, int(sidecar.stem), fresh=False)
            if (job.namespace, job.item) not in chunked:
                self._enqueue(job)
                continue
            if (job.namespace, job.item) not in windowed:  # chunked by a version that made no windows
                self._enqueue(replace(job, windows_only=True), chunk=False)
            if not sidecar.with_suffix(".embedded").exists():
                self._enqueue(job, chunk=False)

    # -- paths ---------------------------------------------------------------

    def _sidecars(self) -> list[Path]:
        """Each stored text's `{item}.json` (what it is, whether it is searchable); not its outline's file."""
        if not self._raw.is_dir():
            return []
        return sorted(p for p in self._raw.glob("*/*.json") if p.stem.isdigit())

    def _path(self, namespace: str, item: int, suffix: str) -> Path:
        return self._texts.path(namespace, item, suffix)

    # -- Storage -------------------------------------------------------------

    def store(
        self, namespace: str, item: int, artifact: Artifact, *, searchable: bool = True, with_outline: bool = True
    ) -> StoredItem:
        """Write the text and its token index; chunk and embed it later unless it is not `searchable`. Its outline
        is made now `with_outline` (the reference shows it), else by the chunker: ~100 ms of a 1 MB store."""
        data = well_formed(artifact.to_text()).encode("utf-8")  # a lone surrogate is stored as U+FFFD, not a crash
        index = index_tokens(data)
        write_atomically(self._path(namespace, item, ".txt"), data)
        write_atomically(self._path(namespace, item, ".idx"), index.to_bytes())
        lines = LineIndex.of(data)
        write_atomically(self._path(namespace, item, ".lines"), lines.to_bytes())
        hint = source_hint(artifact.meta)
        sidecar = {"kind": artifact.kind, "hint": hint, "searchable": searchable}
        made = None
        if searchable and with_outline:  # a copy of an earlier item gets its outline when one is asked for
            deadline.check()
            entries = outline.build(data, artifact.kind, hint, index, lines)
            write_atomically(self._path(namespace, item, ".outline.json"), outline.dumps(entries))
            made = tuple(entries)
        write_atomically(self._path(namespace, item, ".json"), json.dumps(sidecar).encode())
        if searchable:
            self._enqueue(IndexJob(namespace, item, fresh=True))
        return StoredItem(tokens=index.tokens, bytes=len(data), outline=made)

    def load(self, namespace: str, item: int) -> bytes:
        return self._texts.load(namespace, item)

    def delete(self, namespace: str) -> None:
        with self._write_lock:
            self._texts.forget_records(namespace)
            shutil.rmtree(self._raw / namespace, ignore_errors=True)
            with self._state:
                self._pending_lexical.pop(namespace, None)
                self._pending_dense.pop(namespace, None)
                self._state.notify_all()
            self._lexical.delete(namespace)
            self._dense.delete(namespace)

    def namespaces(self) -> set[str]:
        if not self._raw.is_dir():
            return set()
        return {p.name for p in self._raw.iterdir() if p.is_dir()}

    def index_state(self) -> dict[str, IndexState]:
        """Per namespace, how far indexing has got, read from disk (so a read-only view sees a server's work)."""
        chunks = self._lexical.chunk_counts()
        states: dict[str, IndexState] = {}
        for sidecar in self._sidecars():
            try:
                if not json.loads(sidecar.read_bytes()).get("searchable", True):
                    continue
            except (OSError, ValueError):
                continue
            namespace, item = sidecar.parent.name, int(sidecar.stem)
            state = states.setdefault(namespace, IndexState())
            state.items += 1
            count = chunks.get((namespace, item))
            if count is None:
                continue
            state.chunked_items += 1
            state.chunks += count
            state.embedded_chunks += count if sidecar.with_suffix(".embedded").exists() else _embedded_so_far(sidecar)
        return states

    def backlog(self) -> tuple[int, int]:
        """Items this process still has to chunk, and to embed."""
        with self._state:
            return sum(self._pending_lexical.values()), sum(self._pending_dense.values())

    def reclaim(self) -> None:
        """After deletes: let the lexical index's log go, so what they freed counts as free."""
        with self._write_lock:
            self._lexical.reclaim()

    def index_bytes(self) -> int:
        """What the search indexes and the records occupy on this machine's disk (0 for an index elsewhere)."""
        return self._lexical.disk_bytes() + self._dense.disk_bytes() + self._texts.records_bytes()

    # -- reading and search: what LocalTexts and TextSearch do ---------------------

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window:
        return self._texts.window(namespace, item, offset, max_tokens)

    def window_at_line(self, namespace: str, item: int, line: int, max_tokens: int) -> Window:
        return self._texts.window_at_line(namespace, item, line, max_tokens)

    def outline(self, namespace: str, item: int) -> list[Entry]:
        return self._texts.outline(namespace, item)

    def records(self, namespace: str, item: int, *, make: bool = True) -> Summary | None:
        return self._texts.records(namespace, item, make=make)

    def records_written(self) -> int | None:
        return self._texts.records_written

    def records_data(self, namespace: str, item: int) -> bytes | None:
        return self._texts.records_data(namespace, item)

    def lines(self, namespace: str, item: int) -> LineIndex:
        return self._texts.lines(namespace, item)

    def token_index(self, namespace: str, item: int) -> TokenIndex:
        return self._texts.token_index(namespace, item)

    def grep(
        self, pattern: str, namespaces: Sequence[tuple[str, int]], max_matches: int
    ) -> tuple[list[LineMatch], bool]:
        return self._texts.grep(pattern, namespaces, max_matches)

    def query(
        self,
        query: str,
        namespaces: Collection[str] | None,
        top_k: int,
        mode: SearchMode = "hybrid",
        *,
        wait: bool = True,
    ) -> Ranking:
        return self._search.query(query, namespaces, top_k, mode, wait=wait)

    def _dense_answered(self) -> None:
        if self._outage:
            self._retry.set()  # the index is back: the embedder need not sleep out its back-off

    def _get_collection(self) -> Any:
        """The Chroma collection (opened if need be); bench/vectors.py writes pre-computed vectors into it."""
        assert isinstance(self._dense, ChromaDenseIndex), "only a Chroma dense index has a collection"
        return self._dense.open()

    def pending(self, mode: SearchMode = "hybrid") -> set[str]:
        """Namespaces not yet fully searchable in `mode`."""
        with self._state:
            counts = self._pending_lexical if mode == "lexical" else self._pending_dense
            return {ns for ns, count in counts.items() if count > 0}

    def wait_chunked(self, namespaces: Collection[str] | None, timeout: float) -> bool:
        """Wait until these namespaces (None: all) are in the lexical index; False on timeout."""
        scope = None if namespaces is None else set(namespaces)

        def done() -> bool:
            return self._closed or not any(
                count > 0 and (scope is None or ns in scope) for ns, count in self._pending_lexical.items()
            )

        with self._state:
            return self._state.wait_for(done, timeout)

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Block until the background indexers have caught up; for tests and benchmarks."""
        with self._state:
            return self._state.wait_for(
                lambda: (
                    self._closed or (not any(c > 0 for c in self._pending_dense.values()) and not self._pending_windows)
                ),
                timeout,
            )

    def close(self, wait: float = 10) -> None:
        if self.readonly:
            self._lexical.close()
            return
        self._texts.close()
        self._search.close()
        self.stop_indexing(wait)
        if not any(t.is_alive() for t in self._threads):
            self._lexical.close()

    def stop_indexing(self, timeout: float = 10) -> None:
        """Stop the indexing threads after the batch they are on (what is left is resumed on the next open)."""
        self._closed = True
        self._retry.set()
        with self._state:
            self._state.notify_all()
        self._chunk_queue.put(None)
        self._embed_queue.put(None)
        deadline = time.monotonic() + timeout  # one wait for all of them, not one each
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    # -- indexing ------------------------------------------------------------

    def _enqueue(self, job: IndexJob, chunk: bool = True) -> None:
        with self._state:
            if chunk:
                self._pending_lexical[job.namespace] = self._pending_lexical.get(job.namespace, 0) + 1
            if job.windows_only:  # the windows alone: no query waits for them
                self._pending_windows += 1
            else:
                self._pending_dense[job.namespace] = self._pending_dense.get(job.namespace, 0) + 1
            if not self._threads:
                _INDEXING.add(self)
                for name, run in (("offprompt-chunker", self._run_chunker), ("offprompt-embedder", self._run_embedder)):
                    thread = threading.Thread(target=run, name=name, daemon=True)
                    thread.start()
                    self._threads.append(thread)
        if chunk or job.windows_only:
            self._chunk_queue.put(job)
        else:
            self._embed_queue.put(job, self._chunk_count(job))

    def _done(self, counts: dict[str, int], namespace: str) -> None:
        with self._state:
            if namespace in counts:
                counts[namespace] -= 1
            self._state.notify_all()

    def _run_chunker(self) -> None:
        # At the server's own priority, unlike the embedder: a query waits for it (up to
        # text_query.CHUNKING_WAIT_SECONDS), and niced it lost the cores to the batch the model was embedding. It is
        # short, and Python: the GIL, not niceness, is what it shares with the calls being served.
        while (job := self._chunk_queue.get()) is not None:
            if job.windows_only:
                self._make_windows(job)
                with self._state:
                    self._pending_windows -= 1
                    self._state.notify_all()
                continue
            chunked = False
            try:
                chunked = self._chunk(job)
            except Exception:
                logger.exception("chunking item %s of %s failed; it stays readable but is not searchable", *_at(job))
            finally:
                self._done(self._pending_lexical, job.namespace)
            if chunked:
                self._make_windows(job)
                self._make_records(job)
            try:
                # After the count above: being searchable by words does not wait for the outline.
                if chunked and self._outline_made(job):
                    self._embed_queue.put(job, self._chunk_count(job))
                    continue
            except Exception:  # the thread must live on: every later store waits for it, and the embedder too
                logger.exception("queueing item %s of %s to be embedded failed; it is searchable by words", *_at(job))
            self._done(self._pending_dense, job.namespace)

    def _run_embedder(self) -> None:
        lower_priority()
        delay = RETRY_FIRST_SECONDS
        while (job := self._embed_queue.get()) is not None:
            rest: IndexJob | None = None
            try:
                rest = self._embed(job)
            except Exception as exc:
                down = "" if isinstance(exc, PERMANENT_FAILURES) else self._dense_down()
                if down and not self._closed:
                    # Not this text's fault: keep it (and its place) until the index is back.
                    if not self._outage:
                        logger.warning(
                            "the dense index is unreachable (%s): texts are searchable by their words only and are "
                            "embedded when it is back",
                            down,
                        )
                    self._outage = True
                    self._embed_queue.put(job, self._chunk_count(job) - job.done)
                    self._retry.clear()
                    self._retry.wait(delay)
                    delay = min(2 * delay, RETRY_MAX_SECONDS)
                    continue
                if not isinstance(exc, PERMANENT_FAILURES) and not job.retried and not self._closed:
                    # The index answered the check: it may have come back just now. One more try tells.
                    self._embed_queue.put(replace(job, retried=True), self._chunk_count(job) - job.done)
                    continue
                if isinstance(exc, CredentialsRefusedError):
                    logger.warning("item %s of %s is searchable by its words only: %s", *_at(job), exc)
                else:
                    logger.exception("embedding item %s of %s failed; it is searchable by its words only", *_at(job))
            else:
                if self._outage:
                    logger.warning("the dense index is back: embedding the texts stored meanwhile")
                self._outage = False
                delay = RETRY_FIRST_SECONDS
            if rest is not None:
                self._embed_queue.put(rest, self._chunk_count(rest) - rest.done)
            else:
                self._done(self._pending_dense, job.namespace)

    def _dense_down(self) -> str:
        """Why the dense index can't be used now (the server down, the model failing); "" if it can."""
        try:
            self._dense.check()
        except Exception as exc:
            return describe_failure(exc)
        return ""

    def _chunk(self, job: IndexJob) -> bool:
        return chunk_item(self._texts, self._lexical, self._write_lock, job.namespace, job.item)

    def _make_windows(self, job: IndexJob) -> None:
        """The text's windows for the words' first window (`windows.py`), after its chunks are searchable."""
        try:
            window_item(self._texts, self._lexical, self._write_lock, job.namespace, job.item)
        except Exception:
            logger.exception("the windows of item %s of %s failed; its chunks alone rank", *_at(job))

    def _make_records(self, job: IndexJob) -> None:
        """A table's or a log's records, for memory_select (made now, after its words are searchable)."""
        try:
            self._texts.records(job.namespace, job.item)
        except NotFoundError:
            pass  # deleted meanwhile
        except Exception:
            logger.exception("the records of item %s of %s failed; they are made when memory_select asks", *_at(job))

    def _outline_made(self, job: IndexJob) -> bool:
        """Make the item's outline if the store did not need it (~0.1-0.3 s for 1 MB); False if it was deleted."""
        if not self._path(job.namespace, job.item, ".outline.json").exists():
            try:
                self.outline(job.namespace, job.item)
            except NotFoundError:
                return False
            except Exception:
                logger.exception("the outline of item %s of %s failed; it is made when it is asked for", *_at(job))
        return True

    def _let_the_chunker_go_first(self) -> None:
        """Wait, between two batches, while a stored text waits to be searchable by words: the model's threads
        would take the cores the chunker needs, and a query waits for the chunker. Chunking is short (about half a
        second for 1 MB); embedding goes on right after."""
        with self._state:
            self._state.wait_for(
                lambda: self._closed or not any(count > 0 for count in self._pending_lexical.values()),
                EMBEDDER_YIELD_SECONDS,
            )

    def _chunk_count(self, job: IndexJob) -> int:
        return self._lexical.count(job.namespace, job.item)

    def _embed(self, job: IndexJob) -> IndexJob | None:
        """Embed the next slice of the item's chunks; what is left of the job, or None when it is done."""
        try:
            data = self._path(job.namespace, job.item, ".txt").read_bytes()
        except FileNotFoundError:
            return None  # deleted before its turn
        records = self._lexical.chunks(job.namespace, job.item)
        progress = self._path(job.namespace, job.item, ".embedding")
        if not job.fresh and job.done == 0:
            self._dense.delete_item(job.namespace, job.item)  # vectors of an earlier run or chunking
            progress.unlink(missing_ok=True)
        stop = min(job.done + EMBED_SLICE, len(records))
        for first in range(job.done, stop, EMBED_BATCH):
            self._let_the_chunker_go_first()
            if self._closed:
                return None
            batch = records[first : min(first + EMBED_BATCH, stop)]
            documents = [data[r.start : r.end].decode("utf-8") for r in batch]
            # Outside the write lock: embedding is the slow part.
            vectors = self._dense.embed(
                [chunking.for_embedding(searchable(r.context, d)) for r, d in zip(batch, documents, strict=True)]
            )
            with self._write_lock:
                if not self._path(job.namespace, job.item, ".txt").exists():
                    return None
                self._dense.upsert(batch, documents, vectors)
                # How far it got, batch by batch: `memory ls` and `reindex` count a long text's chunks as they go.
                write_atomically(progress, str(first + len(batch)).encode())
        if stop < len(records):
            return replace(job, done=stop)
        with self._write_lock:
            if self._path(job.namespace, job.item, ".txt").exists():
                write_atomically(self._path(job.namespace, job.item, ".embedded"), b"")
                progress.unlink(missing_ok=True)
        return None


#: Every storage with indexing threads, to stop them at exit (see `_stop_indexing_at_exit`).
_INDEXING: weakref.WeakSet[IndexedTextStorage] = weakref.WeakSet()


@atexit.register
def _stop_indexing_at_exit() -> None:
    # A thread still inside onnxruntime when the interpreter tears down aborts the whole process ("terminate
    # called without an active exception", exit 134): a memory nobody closed (a script, offprompt.wrap) lets its
    # embedder finish the batch it is on first.
    for storage in list(_INDEXING):
        storage.stop_indexing(timeout=30)


def _embedded_so_far(sidecar: Path) -> int:
    """Chunks of a text being embedded that are in the dense index already (its `.embedding` file)."""
    try:
        return int(sidecar.with_suffix(".embedding").read_bytes() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _at(job: IndexJob) -> tuple[int, str]:
    return job.item, job.namespace
