"""Text storage of a shared memory: the exact text in PostgreSQL, indexed by whichever server takes the job.

`store` writes the text, its token index, line index and outline, and an indexing job, in one transaction:
the reference it returns is readable through every server at once. A job is chunked (the chunks and their
words, then the text's windows of characters, go to the lexical index in PostgreSQL), then embedded slice by
slice into the Chroma server, if there is one. Each server runs two indexing threads, one per stage, so chunking
(search by words within a second of a store) never waits behind embedding; both take jobs from the `jobs` table
(`FOR UPDATE SKIP LOCKED`, so no two take the same one) with a lease. A heartbeat renews the leases a server
holds while it works; a server that dies or stops mid-job stops renewing, and another takes the job over when
the lease runs out, from the last batch recorded as done. Each claim counts `taken` up, and every write of a
holder checks that count (a fencing token): a holder that lost its lease, stopped past it, writes nothing more.

Each server keeps a read-through copy of the texts it reads in its own data directory (`raw/`, the layout
`local_texts.LocalTexts` reads): a stored text never changes, so the copy is good until the namespace is
deleted, and every read checks the catalog first. The copies are kept to `cache_bytes`, least recently read
first out; each read holds its copies while it reads, so the bound never evicts one from under a reader.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from offprompt.artifacts import Artifact
from offprompt.errors import CredentialsRefusedError, InvalidArgumentError, NotFoundError, StoreUnavailableError
from offprompt.memory import chunking, outline
from offprompt.memory.outline import Entry, LineIndex
from offprompt.memory.records import Summary
from offprompt.memory.storage.base import IndexState, LineMatch, Ranking, SearchMode, StoredItem, Window
from offprompt.memory.storage.files import private_dir
from offprompt.memory.storage.indexes import DenseIndex, LexicalIndex
from offprompt.memory.storage.indexing import (
    EMBED_BATCH,
    EMBED_SLICE,
    chunk_item,
    lower_priority,
    source_hint,
    window_item,
)
from offprompt.memory.storage.local_texts import LocalTexts, searchable
from offprompt.memory.storage.no_dense import NO_VECTORS, NoDenseIndex
from offprompt.memory.storage.pg import PgDatabase
from offprompt.memory.storage.pg_copies import ReadThrough
from offprompt.memory.storage.text_query import TextSearch
from offprompt.tokens import TokenIndex, index_tokens, well_formed

__all__ = ["SharedTextStorage"]

logger = logging.getLogger(__name__)

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS texts (
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    data BYTEA NOT NULL,
    token_index BYTEA NOT NULL,
    line_index BYTEA NOT NULL,
    outline BYTEA,
    sidecar TEXT NOT NULL,
    searchable BOOLEAN NOT NULL,
    embedded BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (namespace, item)
);
CREATE TABLE IF NOT EXISTS jobs (
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    stage TEXT NOT NULL,
    chunks INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    taken INTEGER NOT NULL DEFAULT 0,
    lease_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
    created TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, item)
);
CREATE INDEX IF NOT EXISTS jobs_by_lease ON jobs (lease_until);
"""
#: How long a job stays a server's without a word from it; env OFFPROMPT_JOB_LEASE_SECONDS overrides it.
LEASE_SECONDS: Final = float(os.environ.get("OFFPROMPT_JOB_LEASE_SECONDS", "60"))
#: How often an idle server looks for jobs (it looks at once after its own stores).
POLL_SECONDS: Final = 0.5
#: After embedding failed (the Chroma server down), the job waits this long before it is tried again.
RETRY_SECONDS: Final = 15.0
#: How often an idle server drops its copies of texts another server deleted (copies younger than a minute
#: stay: their store may still be writing them).
SWEEP_SECONDS: Final = 300.0
_SWEEP_AGE_SECONDS: Final = 60.0
_CLAIM: Final = """
UPDATE jobs SET owner = %(owner)s, taken = taken + 1,
    lease_until = clock_timestamp() + make_interval(secs => %(lease)s)
WHERE (namespace, item) = (
    SELECT namespace, item FROM jobs WHERE lease_until < clock_timestamp() AND stage = %(stage)s
    ORDER BY chunks - done, created DESC
    LIMIT 1 FOR UPDATE SKIP LOCKED
)
RETURNING namespace, item, stage, chunks, done, taken
"""
#: The condition of every write a job's holder makes: the job is still its own, under the claim it made.
_HELD: Final = "namespace = %(namespace)s AND item = %(item)s AND owner = %(owner)s AND taken = %(token)s"


@dataclass(frozen=True)
class Claim:
    """A job this server took: `token` is the `taken` count its claim made, which its writes check."""

    namespace: str
    item: int
    stage: str
    chunks: int
    done: int
    token: int


class SharedTextStorage:
    """Texts in PostgreSQL for any number of servers, with a local read-through copy under `cache`."""

    readonly = False

    def __init__(
        self,
        db: PgDatabase,
        cache: Path,
        lexical: LexicalIndex,
        dense: DenseIndex,
        *,
        index: bool = True,
        embed: bool = True,
        cache_bytes: int = 512 * 1024**2,
    ) -> None:
        self._db = db
        self._raw = cache / "raw"
        private_dir(self._raw)
        self._lexical = lexical
        self._dense = dense
        self._write_lock = threading.Lock()  # orders deletes against the indexers' writes
        self._copies = ReadThrough(self._raw, cache_bytes, db)
        self._texts = LocalTexts(self._raw, self._copies, self._write_lock)
        self._search = TextSearch(lexical, dense, self._texts, self.wait_chunked)
        self._vectors = not isinstance(dense, NoDenseIndex)
        self.server_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_seconds = LEASE_SECONDS
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._wake = {"chunk": threading.Event(), "embed": threading.Event()}
        self._held: dict[tuple[str, int], Claim] = {}  # the jobs being worked on, renewed by the heartbeat
        self._lost: set[tuple[str, int]] = set()
        self._held_lock = threading.Lock()
        self._stopping = threading.Event()
        db.ensure_schema(SCHEMA)
        if index:
            self._queue_windows()
            stages = ["chunk", "embed"] if self._vectors and embed else ["chunk"]
            threads = [
                *(
                    threading.Thread(target=self._run_worker, args=(stage,), name=f"offprompt-shared-{stage}er")
                    for stage in stages
                ),
                threading.Thread(target=self._run_heartbeat, name="offprompt-shared-heartbeat"),
            ]
            for thread in threads:
                thread.daemon = True
                thread.start()
                self._threads.append(thread)

    def _path(self, namespace: str, item: int, suffix: str) -> Path:
        return self._texts.path(namespace, item, suffix)

    # -- the local copy --------------------------------------------------------

    def sweep_copies(self, min_age: float = _SWEEP_AGE_SECONDS) -> list[str]:
        """Drop this server's copies of namespaces no longer stored (deleted or expired through another server)."""
        return self._copies.sweep(self.namespaces(), min_age) if self._raw.is_dir() else []

    # -- Storage -----------------------------------------------------------------

    def store(
        self, namespace: str, item: int, artifact: Artifact, *, searchable: bool = True, with_outline: bool = True
    ) -> StoredItem:
        """Write the text and its indexes to the database with its indexing job, in one transaction. The outline
        is made now whatever `with_outline` says: the other servers read it from the database."""
        data = well_formed(artifact.to_text()).encode("utf-8")
        index = index_tokens(data)
        lines = LineIndex.of(data)
        hint = source_hint(artifact.meta)
        sidecar = json.dumps({"kind": artifact.kind, "hint": hint, "searchable": searchable})
        made = tuple(outline.build(data, artifact.kind, hint, index, lines)) if searchable else None
        entries = outline.dumps(list(made)) if made is not None else None
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO texts (namespace, item, data, token_index, line_index, outline, sidecar, searchable) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (namespace, item, data, index.to_bytes(), lines.to_bytes(), entries, sidecar, searchable),
            )
            if searchable:
                conn.execute("INSERT INTO jobs (namespace, item, stage) VALUES (%s, %s, 'chunk')", (namespace, item))
        # This server's copy, so that reading back what it just stored needs no round trip.
        self._copies.write(namespace, item, data, index.to_bytes(), lines.to_bytes(), entries, sidecar.encode())
        if searchable:
            self._wake["chunk"].set()
        return StoredItem(tokens=index.tokens, bytes=len(data), outline=made)

    def load(self, namespace: str, item: int) -> bytes:
        return self._texts.load(namespace, item)

    def delete(self, namespace: str) -> None:
        with self._write_lock:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM jobs WHERE namespace = %s", (namespace,))
                conn.execute("DELETE FROM texts WHERE namespace = %s", (namespace,))
            shutil.rmtree(self._raw / namespace, ignore_errors=True)
            self._copies.dropped(namespace)
            self._lexical.delete(namespace)
            self._dense.delete(namespace)

    def namespaces(self) -> set[str]:
        with self._db.connection() as conn:
            return {ns for (ns,) in conn.execute("SELECT DISTINCT namespace FROM texts")}

    def index_state(self) -> dict[str, IndexState]:
        chunks = self._lexical.chunk_counts()
        with self._db.connection() as conn:
            rows = conn.execute("SELECT namespace, item, embedded FROM texts WHERE searchable").fetchall()
        states: dict[str, IndexState] = {}
        for namespace, item, embedded in rows:
            state = states.setdefault(namespace, IndexState())
            state.items += 1
            count = chunks.get((namespace, int(item)))
            if count is None:
                continue
            state.chunked_items += 1
            state.chunks += count
            if embedded:
                state.embedded_chunks += count
        return states

    def backlog(self) -> tuple[int, int]:
        """Items the servers of this memory still have to chunk, and to embed."""
        with self._db.connection() as conn:
            row = conn.execute("SELECT COUNT(*) FILTER (WHERE stage = 'chunk'), COUNT(*) FROM jobs").fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def reclaim(self) -> None:
        pass  # autovacuum gives deleted rows back

    def index_bytes(self) -> int:
        return 0  # the indexes live on the database and Chroma servers, not on this machine's disk

    # -- reading and search: what LocalTexts and TextSearch do, through the copies ------------

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window:
        return self._texts.window(namespace, item, offset, max_tokens)

    def window_at_line(self, namespace: str, item: int, line: int, max_tokens: int) -> Window:
        return self._texts.window_at_line(namespace, item, line, max_tokens)

    def outline(self, namespace: str, item: int) -> list[Entry]:
        return self._texts.outline(namespace, item)

    def records(self, namespace: str, item: int, *, make: bool = True) -> Summary | None:
        return self._texts.records(namespace, item, make=make)

    def records_written(self) -> None:
        return None  # the index workers of other servers make them too

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
        if not self._vectors:
            if mode == "dense":
                raise InvalidArgumentError(NO_VECTORS)
            mode = "lexical"  # hybrid without vectors is by words
        return self._search.query(query, namespaces, top_k, mode, wait=wait)

    # -- what is still indexing, across servers -------------------------------------

    def pending(self, mode: SearchMode = "hybrid") -> set[str]:
        # A text's windows alone ('window') hold back no query: it is searchable without them.
        stage = "WHERE stage = 'chunk'" if mode == "lexical" or not self._vectors else "WHERE stage <> 'window'"
        try:
            with self._db.connection() as conn:
                return {ns for (ns,) in conn.execute(f"SELECT DISTINCT namespace FROM jobs {stage}")}
        except StoreUnavailableError:
            return set()

    def wait_chunked(self, namespaces: Collection[str] | None, timeout: float) -> bool:
        """Wait until these namespaces are in the lexical index, whichever server chunks them; an unscoped
        query does not wait (it answers with what is indexed, and names the rest as indexing)."""
        if namespaces is None:
            return True
        scope = sorted(namespaces)
        deadline = time.monotonic() + timeout
        while True:
            with self._db.connection() as conn:
                row = conn.execute(
                    "SELECT 1 FROM jobs WHERE stage = 'chunk' AND namespace = ANY(%s) LIMIT 1", (scope,)
                ).fetchone()
            if row is None or self._closed:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Block until every server's indexing of this memory has caught up; for tests and benchmarks."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._db.connection() as conn:
                row = conn.execute("SELECT 1 FROM jobs LIMIT 1").fetchone()
            if row is None or self._closed:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    def close(self, wait: float = 10) -> None:
        self._texts.close()
        self._search.close()
        self.stop_indexing(wait)
        if not any(t.is_alive() for t in self._threads):
            self._lexical.close()
        self._db.close()

    def stop_indexing(self, timeout: float = 10) -> None:
        """Stop the indexing threads after the batch they are on (another server, or the next start, goes on)."""
        self._closed = True
        self._stopping.set()
        for wake in self._wake.values():
            wake.set()
        deadline = time.monotonic() + timeout  # one wait for all of them, not one each
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    # -- the queue -------------------------------------------------------------------

    def _run_worker(self, stage: str) -> None:
        """Take this stage's jobs, one at a time, until the storage closes."""
        lower_priority()
        swept = time.monotonic()
        wake = self._wake[stage]
        while not self._closed:
            try:
                claim = self._claim(stage) or (self._claim("window") if stage == "chunk" else None)
                if claim is None:
                    if stage == "chunk" and time.monotonic() - swept >= SWEEP_SECONDS:
                        self.sweep_copies()
                        swept = time.monotonic()
                    wake.wait(POLL_SECONDS)
                    wake.clear()
                    continue
                with self._holding(claim):
                    self._work(claim)
            except StoreUnavailableError:
                time.sleep(POLL_SECONDS * 4)  # the job's lease runs out; it is taken again when PostgreSQL is back
            except Exception:
                logger.exception("the shared %ser failed; it goes on with the next job", stage)
                time.sleep(POLL_SECONDS)

    def _claim(self, stage: str) -> Claim | None:
        with self._db.connection() as conn:
            row = conn.execute(
                _CLAIM, {"owner": self.server_id, "lease": self.lease_seconds, "stage": stage}
            ).fetchone()
        return (
            None if row is None else Claim(str(row[0]), int(row[1]), str(row[2]), int(row[3]), int(row[4]), int(row[5]))
        )

    # -- the lease: renewed while held, checked by every write ----------------------------

    @contextmanager
    def _holding(self, claim: Claim) -> Iterator[None]:
        key = (claim.namespace, claim.item)
        with self._held_lock:
            self._held[key] = claim
            self._lost.discard(key)
        try:
            yield
        finally:
            with self._held_lock:
                self._held.pop(key, None)
                self._lost.discard(key)

    def _run_heartbeat(self) -> None:
        """Renew every held lease three times per lease: a job is a server's for as long as the server runs."""
        while not self._closed:
            with self._held_lock:
                held = list(self._held.values())
            for claim in held:
                try:
                    if not self._renew(claim):
                        with self._held_lock:
                            self._lost.add((claim.namespace, claim.item))
                except StoreUnavailableError:
                    pass  # the writes fail too; the lease may run out meanwhile, and then they find it lost
                except Exception:
                    logger.exception("renewing the lease of item %s of %s failed", claim.item, claim.namespace)
            self._stopping.wait(self.lease_seconds / 3)  # set at close: a stop never waits out a renewal period

    def _held_args(self, claim: Claim, **more: Any) -> dict[str, Any]:
        return {"namespace": claim.namespace, "item": claim.item, "owner": self.server_id, "token": claim.token, **more}

    def _renew(self, claim: Claim) -> bool:
        """Extend the job's lease; False if it is no longer this server's (deleted, or taken over)."""
        with self._db.connection() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET lease_until = clock_timestamp() + make_interval(secs => %(lease)s) WHERE {_HELD}",
                self._held_args(claim, lease=self.lease_seconds),
            )
            return cursor.rowcount == 1

    def _record(self, claim: Claim, done: int) -> bool:
        """Note `done` chunks embedded, so a server taking the job over goes on from there; False if lost."""
        with self._db.connection() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET done = %(done)s, lease_until = clock_timestamp() + make_interval(secs => %(lease)s) "
                f"WHERE {_HELD}",
                self._held_args(claim, done=done, lease=self.lease_seconds),
            )
            return cursor.rowcount == 1

    def _still_held(self, claim: Claim) -> bool:
        with self._held_lock:
            lost = (claim.namespace, claim.item) in self._lost
        return not lost and not self._closed

    # -- the work of a job ----------------------------------------------------------------

    def _queue_windows(self) -> None:
        """Queue a 'window' job for each text chunked by a version that made no windows (`windows.py`): the chunk
        stage's threads make them when no text waits to be chunked."""
        missing = sorted(self._lexical.indexed() - self._lexical.windowed())
        with self._db.connection() as conn:
            conn.execute(
                "INSERT INTO jobs (namespace, item, stage) SELECT t.namespace, t.item, 'window' FROM texts t JOIN "
                "unnest(%s::text[], %s::int[]) AS m(namespace, item) USING (namespace, item) ON CONFLICT DO NOTHING",
                ([ns for ns, _ in missing], [item for _, item in missing]),
            )

    def _make_windows(self, namespace: str, item: int) -> None:
        """The text's windows for the words' first window (`windows.py`); written before its job moves on, so a
        delete meanwhile is caught by the same fence as its chunks (a query scoped to the text waits for them:
        0.35 s for 1 MB of words on a local PostgreSQL)."""
        try:
            window_item(self._texts, self._lexical, self._write_lock, namespace, item)
        except StoreUnavailableError:
            raise
        except Exception:
            logger.exception("the windows of item %s of %s failed; its chunks alone rank", item, namespace)

    def _work(self, claim: Claim) -> None:
        namespace, item = claim.namespace, claim.item
        if claim.stage == "window":
            self._make_windows(namespace, item)
            with self._db.connection() as conn:
                finished = self._finish(conn, claim)
            if not finished:
                self._drop_if_deleted(namespace)
            return
        if claim.stage == "chunk":
            try:
                chunked = chunk_item(self._texts, self._lexical, self._write_lock, namespace, item)
            except StoreUnavailableError:
                raise
            except Exception:
                logger.exception(
                    "chunking item %s of %s failed; it stays readable but is not searchable", item, namespace
                )
                chunked = False
            if chunked:
                self._make_windows(namespace, item)
            with self._db.connection() as conn:
                if chunked and self._vectors:
                    moved = conn.execute(
                        "UPDATE jobs SET stage = 'embed', chunks = %(chunks)s, done = 0, owner = NULL, "
                        f"lease_until = '-infinity' WHERE {_HELD}",
                        self._held_args(claim, chunks=self._lexical.count(namespace, item)),
                    ).rowcount
                else:
                    moved = self._finish(conn, claim)
            if chunked and not moved:
                self._drop_if_deleted(namespace)
            self._wake["embed"].set()  # its embedding, next
            return
        try:
            left = self._embed_slice(claim)
        except StoreUnavailableError:
            raise
        except CredentialsRefusedError as exc:
            logger.warning("item %s of %s is searchable by its words only: %s", item, namespace, exc)
            self._release(claim, claim.done, RETRY_SECONDS)
            return
        except Exception:
            logger.exception(
                "embedding item %s of %s failed; it is searchable by its words, and is tried again in %s s",
                item,
                namespace,
                RETRY_SECONDS,
            )
            self._release(claim, claim.done, RETRY_SECONDS)
            return
        if left is not None:
            self._release(claim, left, 0)

    def _finish(self, conn: Any, claim: Claim) -> int:
        """Drop the job if it is still this server's; how many rows that took (0: deleted, or taken over)."""
        return int(conn.execute(f"DELETE FROM jobs WHERE {_HELD}", self._held_args(claim)).rowcount)

    def _drop_if_deleted(self, namespace: str) -> None:
        """After indexing a text whose namespace was deleted meanwhile (through any server): drop what the
        indexing wrote after the delete, so no search finds it."""
        with self._db.connection() as conn:
            if conn.execute("SELECT 1 FROM texts WHERE namespace = %s LIMIT 1", (namespace,)).fetchone():
                return  # still stored: the job was taken over after this server's lease ran out
        with self._write_lock:
            self._lexical.delete(namespace)
            self._dense.delete(namespace)
            shutil.rmtree(self._raw / namespace, ignore_errors=True)
            self._copies.dropped(namespace)

    def _release(self, claim: Claim, done: int, delay: float) -> None:
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE jobs SET done = %(done)s, owner = NULL, "
                f"lease_until = clock_timestamp() + make_interval(secs => %(delay)s) WHERE {_HELD}",
                self._held_args(claim, done=done, delay=delay),
            )

    def _embed_slice(self, claim: Claim) -> int | None:
        """Embed the next slice of the item's chunks, noting each batch as done; where the next slice starts,
        or None when all are in (or the job is no longer this server's)."""
        namespace, item, done = claim.namespace, claim.item, claim.done
        try:
            data = self._texts.load(namespace, item)
        except NotFoundError:
            with self._db.connection() as conn:
                self._finish(conn, claim)
            return None
        records = self._lexical.chunks(namespace, item)
        if done == 0:
            self._dense.delete_item(namespace, item)  # vectors of a server that died mid-job
        stop = min(done + EMBED_SLICE, len(records))
        for first in range(done, stop, EMBED_BATCH):
            if not self._still_held(claim):
                return None  # closing, or taken over: the next holder goes on from the last batch recorded
            batch = records[first : min(first + EMBED_BATCH, stop)]
            documents = [data[r.start : r.end].decode("utf-8") for r in batch]
            vectors = self._dense.embed(
                [chunking.for_embedding(searchable(r.context, d)) for r, d in zip(batch, documents, strict=True)]
            )
            if not self._renew(claim):  # the fence before the vector store, which cannot check it itself
                self._drop_if_deleted(namespace)
                return None
            self._dense.upsert(batch, documents, vectors)
            if not self._record(claim, first + len(batch)):
                self._drop_if_deleted(namespace)  # deleted while this batch was written: take it out again
                return None
        if stop < len(records):
            return stop
        with self._db.transaction() as conn:
            finished = self._finish(conn, claim)
            if finished:
                conn.execute("UPDATE texts SET embedded = TRUE WHERE namespace = %s AND item = %s", (namespace, item))
        if not finished:
            self._drop_if_deleted(namespace)
        return None
