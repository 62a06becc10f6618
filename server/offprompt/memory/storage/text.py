"""Text storage: the exact text on disk; its chunks in a lexical index (SQLite FTS5) and a dense one (Chroma).

`store` writes the raw UTF-8 bytes and a token index (each token's byte
offset) before it returns, so a reference is never handed out for text that
could be lost, and it does nothing slower. Two background threads index it:
the chunker cuts it along its structure (:mod:`offprompt.memory.chunking`) and writes
the chunks with their terms to the lexical index (a second or so for 1 MB);
the embedder then embeds them into Chroma (about a minute for 1 MB on two
cores). A query waits briefly for the chunker on the namespaces it searches,
so a just-stored result is found by its words at once; until the embedder is
done too, `pending()` names the namespace.

`query` ranks in one of three modes: `dense` (cosine similarity of the
embeddings: finds paraphrases), `lexical` (BM25 over words and identifiers)
or `hybrid` (both scores, normalised and combined: see :func:`_fuse`). In
`lexical` and `hybrid`, a chunk that contains an identifier the query names
(``ERR_CONN_RESET``, ``TimeoutExpired``, a path) ranks above every chunk that
doesn't, as grep would find it.

Layout under `root`: raw/{namespace}/{item}.txt .idx (uint32 token offsets)
.json (kind, hint) .embedded (marker); lexical.sqlite3; chroma/ for a
persistent collection; deleted.txt (namespaces to drop from Chroma when it
opens).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import queue
import re
import shutil
import sys
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, get_args

import numpy as np

from offprompt.artifacts import Artifact
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory import chunking
from offprompt.memory.storage.base import Hit, LineMatch, SearchMode, StoredItem, Window
from offprompt.memory.storage.blob import write_atomically
from offprompt.memory.storage.dense import ChromaLocation, DenseIndex, EmbeddingSpec, collection_name
from offprompt.memory.storage.lexical import ChunkRecord, LexicalIndex, identifiers
from offprompt.tokens import TokenIndex, index_tokens

__all__ = ["ChromaLocation", "ChromaTextStorage", "EmbeddingSpec", "collection_name", "searchable"]

logger = logging.getLogger(__name__)

MODES: Final = get_args(SearchMode)

INDEXER_NICENESS = 10
EMBED_BATCH: Final = 32
#: The embedder works on one text for at most this many chunks before it looks for a smaller one waiting: a small
#: result stored while a huge one embeds is searchable by meaning in seconds, not after the huge one.
EMBED_SLICE: Final = 8 * EMBED_BATCH
#: Candidates each ranking contributes before fusion.
CANDIDATES: Final = 50
#: In hybrid mode, the weight of the normalised dense score; the lexical one gets the rest.
DENSE_WEIGHT: Final = 0.5
#: How long a query waits for just-stored text to reach the lexical index.
CHUNKING_WAIT_SECONDS: Final = 10.0
_OFFSET_BYTES = 4


@dataclass(frozen=True, slots=True)
class _Job:
    namespace: str
    item: int
    fresh: bool  # stored by this process, so nothing of it is in the indexes yet
    done: int = 0  # chunks already embedded (by earlier slices)


class _EmbedQueue:
    """Texts waiting to be embedded, the one with the fewest chunks left first, then the newest: a quick win for
    the model before a long job. ``None`` (closing) comes out before anything else."""

    def __init__(self) -> None:
        self._heap: queue.PriorityQueue[tuple[int, int, _Job | None]] = queue.PriorityQueue()
        self._order = itertools.count()

    def put(self, job: _Job | None, left: int = 0) -> None:
        # Newest first among equals: the count runs down.
        self._heap.put((-1, 0, None) if job is None else (left, -next(self._order), job))

    def get(self) -> _Job | None:
        return self._heap.get()[2]


@dataclass(slots=True)
class _Candidate:
    """A chunk one of the rankings found, with what fusion needs to know of it."""

    record: ChunkRecord
    scores: dict[str, float] = field(default_factory=dict)  # "lexical": BM25, "dense": cosine similarity
    text: str = ""
    named: int = 0  # how many of the query's identifiers it contains
    score: float = 0.0


def searchable(context: str, text: str) -> str:
    """What a chunk is indexed as: its context line, then its text."""
    return f"{context}\n{text}" if context else text


def _fuse(candidates: Sequence[_Candidate]) -> None:
    """Hybrid scores: a convex combination of the two scores, each normalised over the candidates.

    BM25 is divided by the best BM25 (0 stays "no shared word"); similarity is min-max scaled, since cosine
    values of one model crowd a narrow band. Unlike rank fusion, a clear winner of one ranking stays ahead of
    chunks both rankings find middling.
    """
    top = max((c.scores.get("lexical", 0.0) for c in candidates), default=0.0)
    similar = [c.scores["dense"] for c in candidates if "dense" in c.scores]
    low, high = (min(similar), max(similar)) if similar else (0.0, 0.0)
    for c in candidates:
        lexical = c.scores.get("lexical", 0.0) / top if top > 0 else 0.0
        dense = (c.scores["dense"] - low) / (high - low) if "dense" in c.scores and high > low else 0.0
        c.score = DENSE_WEIGHT * dense + (1 - DENSE_WEIGHT) * lexical


class ChromaTextStorage:
    """Lossless text on disk, a lexical index and a Chroma index of its chunks, built in the background."""

    def __init__(
        self, root: Path, memory_name: str, location: ChromaLocation, embedding: EmbeddingSpec | None = None
    ) -> None:
        self._raw = root / "raw"
        self._raw.mkdir(parents=True, exist_ok=True)
        if location.mode == "persistent" and location.path is None:
            location = ChromaLocation(mode="persistent", path=root / "chroma")
        self._lexical = LexicalIndex(root / "lexical.sqlite3")
        self._dense = DenseIndex(memory_name, location, embedding or EmbeddingSpec(), root / "deleted.txt")
        self._write_lock = threading.Lock()  # orders deletes against the indexers' writes
        self._state = threading.Condition()  # guards the pending counts below
        self._pending_lexical: dict[str, int] = {}
        self._pending_dense: dict[str, int] = {}
        self._chunk_queue: queue.Queue[_Job | None] = queue.Queue()
        self._embed_queue = _EmbedQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._recover()

    def _recover(self) -> None:
        """Finish the indexing that an earlier process left undone, and forget chunks of deleted texts."""
        stored = self.namespaces()
        for namespace in self._lexical.namespaces() - stored:
            self._lexical.delete(namespace)
        chunked = self._lexical.indexed()
        for sidecar in sorted(self._raw.glob("*/*.json")):
            if not json.loads(sidecar.read_bytes()).get("searchable", True):
                continue
            job = _Job(sidecar.parent.name, int(sidecar.stem), fresh=False)
            if (job.namespace, job.item) not in chunked:
                self._enqueue(job)
            elif not sidecar.with_suffix(".embedded").exists():
                self._enqueue(job, chunk=False)

    # -- paths ---------------------------------------------------------------

    def _path(self, namespace: str, item: int, suffix: str) -> Path:
        return self._raw / namespace / f"{item}{suffix}"

    def _require(self, namespace: str, item: int) -> Path:
        path = self._path(namespace, item, ".txt")
        if not path.exists():
            raise NotFoundError(f"no text stored as item {item} of {namespace!r}")
        return path

    # -- Storage -------------------------------------------------------------

    def store(self, namespace: str, item: int, artifact: Artifact, *, searchable: bool = True) -> StoredItem:
        """Write the text and its token index; chunk and embed it later unless it is not `searchable`."""
        data = artifact.to_text().encode("utf-8")
        index = index_tokens(data)
        write_atomically(self._path(namespace, item, ".txt"), data)
        write_atomically(self._path(namespace, item, ".idx"), index.to_bytes())
        sidecar = {"kind": artifact.kind, "hint": _hint(artifact.meta), "searchable": searchable}
        write_atomically(self._path(namespace, item, ".json"), json.dumps(sidecar).encode())
        if searchable:
            self._enqueue(_Job(namespace, item, fresh=True))
        return StoredItem(tokens=index.tokens, bytes=len(data))

    def load(self, namespace: str, item: int) -> bytes:
        return self._require(namespace, item).read_bytes()

    def delete(self, namespace: str) -> None:
        with self._write_lock:
            shutil.rmtree(self._raw / namespace, ignore_errors=True)
            with self._state:
                self._pending_lexical.pop(namespace, None)
                self._pending_dense.pop(namespace, None)
                self._state.notify_all()
            self._lexical.delete(namespace)
            self._dense.delete(namespace)

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

    def query(
        self, query: str, namespaces: Collection[str] | None, top_k: int, mode: SearchMode = "hybrid"
    ) -> list[Hit]:
        """The `top_k` chunks that best answer `query` in `mode`, best first."""
        if top_k <= 0:
            raise InvalidArgumentError(f"top_k must be at least 1, not {top_k}")
        if not query.strip():
            raise InvalidArgumentError("query is empty: say what you are looking for")
        if mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if namespaces is not None and not namespaces:
            return []
        depth = max(CANDIDATES, 2 * top_k)
        candidates: dict[str, _Candidate] = {}

        def collect(name: str, ranked: Sequence[tuple[ChunkRecord, float]], documents: Sequence[str] = ()) -> None:
            for k, (record, score) in enumerate(ranked):
                found = candidates.setdefault(record.id, _Candidate(record))
                found.scores[name] = score
                if record.start < 0 and k < len(documents):
                    # A vector written without a span (by an earlier version, until it is re-embedded): the
                    # document stored with it is its text.
                    found.text = documents[k]

        names: list[str] = []
        if mode != "dense":
            self.wait_chunked(namespaces, CHUNKING_WAIT_SECONDS)
            collect("lexical", [(h.record, h.score) for h in self._lexical.search(query, namespaces, depth)])
            names = identifiers(query)
            if names:
                # Chunks naming the identifiers, even where the query's other words would not rank them high.
                named = self._lexical.search(query, namespaces, depth, require_any=names)
                collect("lexical", [(h.record, h.score) for h in named])
        vector: Sequence[float] | None = None
        if mode != "lexical":
            vector = self._dense.embed_query(chunking.for_embedding(query))
            nearest = self._dense.search(vector, namespaces, depth)
            collect("dense", [(r, score) for r, score, _ in nearest], [doc for _, _, doc in nearest])

        self._read_texts(candidates)
        found = [c for c in candidates.values() if c.text]
        for c in found:
            # Exact and case-sensitive, as grep matches: "JavaScript" in a question is not "libjavascriptcore".
            c.named = sum(1 for name in names if name in c.text or name in c.record.context)
        if mode == "hybrid":
            self._complete(query, vector, found)
            _fuse(found)
        else:
            for c in found:
                c.score = c.scores.get(mode, 0.0)
        best = sorted(found, key=lambda c: (c.named, c.score), reverse=True)[:top_k]
        return [Hit(c.record.namespace, c.record.item, c.record.offset, round(c.score, 4), c.text) for c in best]

    def _complete(self, query: str, vector: Sequence[float] | None, found: Sequence[_Candidate]) -> None:
        """Give each candidate both scores: BM25 to those found by meaning, similarity to those found by words."""
        lexical = self._lexical.scores(query, [c.record for c in found if "lexical" not in c.scores])
        missing = [c.record for c in found if "dense" not in c.scores]
        dense = self._dense.similarities(vector, missing) if vector is not None else {}
        for c in found:
            c.scores.setdefault("lexical", lexical.get(c.record.id, 0.0))
            if c.record.id in dense:
                c.scores["dense"] = dense[c.record.id]

    def _read_texts(self, candidates: Mapping[str, _Candidate]) -> None:
        """Each candidate's exact text from the raw file; a deleted one stays empty."""
        by_file: dict[tuple[str, int], list[_Candidate]] = {}
        for c in candidates.values():
            by_file.setdefault((c.record.namespace, c.record.item), []).append(c)
        for (namespace, item), found in by_file.items():
            try:
                with open(self._path(namespace, item, ".txt"), "rb") as f:
                    for c in found:
                        if c.record.start >= 0:
                            f.seek(c.record.start)
                            c.text = f.read(c.record.end - c.record.start).decode("utf-8", errors="replace")
            except FileNotFoundError:
                for c in found:
                    c.text = ""  # deleted while its chunks were still being dropped

    def _get_collection(self) -> Any:
        """The Chroma collection (opened if need be); bench/vectors.py writes pre-computed vectors into it."""
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
                lambda: self._closed or not any(c > 0 for c in self._pending_dense.values()), timeout
            )

    def close(self) -> None:
        self._closed = True
        with self._state:
            self._state.notify_all()
        self._chunk_queue.put(None)
        self._embed_queue.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        if not any(t.is_alive() for t in self._threads):
            self._lexical.close()

    # -- indexing ------------------------------------------------------------

    def _enqueue(self, job: _Job, chunk: bool = True) -> None:
        with self._state:
            if chunk:
                self._pending_lexical[job.namespace] = self._pending_lexical.get(job.namespace, 0) + 1
            self._pending_dense[job.namespace] = self._pending_dense.get(job.namespace, 0) + 1
            if not self._threads:
                for name, run in (("offprompt-chunker", self._run_chunker), ("offprompt-embedder", self._run_embedder)):
                    thread = threading.Thread(target=run, name=name, daemon=True)
                    thread.start()
                    self._threads.append(thread)
        if chunk:
            self._chunk_queue.put(job)
        else:
            self._embed_queue.put(job, self._chunk_count(job))

    def _done(self, counts: dict[str, int], namespace: str) -> None:
        with self._state:
            if namespace in counts:
                counts[namespace] -= 1
            self._state.notify_all()

    def _run_chunker(self) -> None:
        _lower_priority()
        while (job := self._chunk_queue.get()) is not None:
            chunked = False
            try:
                chunked = self._chunk(job)
            except Exception:
                logger.exception("chunking item %s of %s failed; it stays readable but is not searchable", *_at(job))
            finally:
                self._done(self._pending_lexical, job.namespace)
            if chunked:
                self._embed_queue.put(job, self._chunk_count(job))
            else:
                self._done(self._pending_dense, job.namespace)

    def _run_embedder(self) -> None:
        _lower_priority()
        while (job := self._embed_queue.get()) is not None:
            rest: _Job | None = None
            try:
                rest = self._embed(job)
            except Exception:
                logger.exception("embedding item %s of %s failed; it is searchable by its words only", *_at(job))
            if rest is not None:
                self._embed_queue.put(rest, self._chunk_count(rest) - rest.done)
            else:
                self._done(self._pending_dense, job.namespace)

    def _chunk(self, job: _Job) -> bool:
        """Cut the item into chunks and put them in the lexical index; False if it was deleted meanwhile."""
        try:
            data = self._path(job.namespace, job.item, ".txt").read_bytes()
            offsets = TokenIndex.from_bytes(self._path(job.namespace, job.item, ".idx").read_bytes()).offsets
            sidecar = json.loads(self._path(job.namespace, job.item, ".json").read_bytes())
        except FileNotFoundError:
            return False
        chunks = chunking.chunk(data, sidecar["kind"], sidecar.get("hint", ""))
        starts = np.asarray([c.start for c in chunks], dtype=np.int64)
        first_tokens = (np.maximum(np.searchsorted(offsets, starts, side="right") - 1, 0)).tolist()
        records = [
            ChunkRecord(job.namespace, job.item, n, c.start, c.end, int(first_tokens[n]), c.context)
            for n, c in enumerate(chunks)
        ]
        texts = [data[c.start : c.end].decode("utf-8") for c in chunks]
        titles = [f"{c.context}\n{c.titles}" for c in chunks]
        with self._write_lock:
            if not self._path(job.namespace, job.item, ".txt").exists():
                return False
            self._lexical.add(job.namespace, job.item, records, texts, titles)
        return True

    def _chunk_count(self, job: _Job) -> int:
        return self._lexical.count(job.namespace, job.item)

    def _embed(self, job: _Job) -> _Job | None:
        """Embed the next slice of the item's chunks; what is left of the job, or None when it is done."""
        try:
            data = self._path(job.namespace, job.item, ".txt").read_bytes()
        except FileNotFoundError:
            return None  # deleted before its turn
        records = self._lexical.chunks(job.namespace, job.item)
        if not job.fresh and job.done == 0:
            self._dense.delete_item(job.namespace, job.item)  # vectors of an earlier run or chunking
        stop = min(job.done + EMBED_SLICE, len(records))
        for first in range(job.done, stop, EMBED_BATCH):
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
        if stop < len(records):
            return replace(job, done=stop)
        with self._write_lock:
            if self._path(job.namespace, job.item, ".txt").exists():
                write_atomically(self._path(job.namespace, job.item, ".embedded"), b"")
        return None


def _at(job: _Job) -> tuple[int, str]:
    return job.item, job.namespace


def _hint(meta: Mapping[str, Any]) -> str:
    """A file name or MIME type the MCP block carried, which tells the chunker what the text is."""
    mcp = meta.get("mcp")
    if not isinstance(mcp, dict):
        return ""
    resource = mcp.get("resource")
    fields = resource if isinstance(resource, dict) else mcp
    return " ".join(str(fields[k]) for k in ("uri", "mimeType") if isinstance(fields.get(k), str))


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


def _lower_priority() -> None:
    """Indexing yields the CPU to the calls the model is waiting for (Linux sets niceness per thread)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INDEXER_NICENESS)
