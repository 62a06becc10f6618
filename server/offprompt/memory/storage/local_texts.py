"""Stored texts read back from a directory on this machine: token windows, line windows, outlines, grep, and the
texts of a query's candidates.

Both text storages read this way. The files storage's directory is where its texts live; the shared memory's is
this server's read-through copy of texts kept in PostgreSQL. Which texts are on disk, and whether a missing one
can be fetched first, is the `TextSource`'s: every read holds its texts through it for as long as it reads, so
a copy evicted to keep the cache bound is never pulled from under a reader.

Layout under `raw`: {namespace}/{item}.txt (the UTF-8 bytes), .idx (uint32 token offsets, then the size),
.lines (uint32 line starts, then the size), .json (kind, hint, searchable), .outline.json (the outline),
.records (a table's or a log's records as a JSON array) and .records.json (their summary, written last; `null` for a
text with none).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory import outline, records
from offprompt.memory.outline import Entry, LineIndex
from offprompt.memory.records import Summary
from offprompt.memory.storage.base import Candidate, Hit, LineMatch, Window
from offprompt.memory.storage.files import write_atomically
from offprompt.memory.storage.grep import GrepWorkers
from offprompt.memory.storage.windows import widened, widened_in
from offprompt.tokens import TokenIndex

__all__ = ["MAX_LINE_CHARS", "LocalTexts", "OnDisk", "TextSource", "searchable"]

#: A grep hit longer than this shows the part around the match.
MAX_LINE_CHARS: Final = 400
_OFFSET_BYTES: Final = 4

Key = tuple[str, int]


def searchable(context: str, text: str) -> str:
    """What a chunk is indexed as: its context line, then its text."""
    return f"{context}\n{text}" if context else text


class TextSource(Protocol):
    """Which stored texts are on disk under the directory, for the length of a read."""

    def held(self, keys: Collection[Key]) -> AbstractContextManager[set[Key]]:
        """Those of `keys` that are stored, each on disk (fetched first, where texts live elsewhere) until the
        block ends."""
        ...


class OnDisk:
    """The files storage's source: a text is stored if its file is there, and stays until it is deleted."""

    def __init__(self, raw: Path) -> None:
        self._raw = raw

    @contextlib.contextmanager
    def held(self, keys: Collection[Key]) -> Iterator[set[Key]]:
        yield {(ns, item) for ns, item in keys if (self._raw / ns / f"{item}.txt").exists()}


class LocalTexts:
    """Reads of the texts under `raw`, each holding its texts through `source` while it reads."""

    def __init__(
        self,
        raw: Path,
        source: TextSource,
        write_lock: threading.Lock,
        *,
        readonly: bool = False,
        records_max_bytes: int = records.MAX_BYTES,
    ) -> None:
        self.raw = raw
        self._raw_path = str(raw)
        self._source = source
        self._write_lock = write_lock  # outlines made on a first read are written under the storage's lock
        self._readonly = readonly
        self._grep = GrepWorkers()
        self.records_max_bytes = records_max_bytes
        #: One text's records are made at a time: memory_select asking for them waits for the indexer making them.
        self._records_lock = threading.Lock()
        self._records_bytes: int | None = None  # on disk, counted once, then kept up to date
        #: Each text's records summary as last read, with the identity of the file it was read from: a listing
        #: stats the file instead of reading and parsing it again (a write replaces the file: a new identity).
        self._summaries: dict[tuple[str, int], tuple[tuple[int, int, int], Summary | None]] = {}
        #: Summaries written or dropped by this object (None for a read-only view: the server writes them).
        self.records_written: int | None = None if readonly else 0

    def path(self, namespace: str, item: int, suffix: str) -> Path:
        return self.raw / namespace / f"{item}{suffix}"

    @contextlib.contextmanager
    def held(self, namespace: str, item: int) -> Iterator[Path]:
        """The text's file, on disk for the block; NotFoundError if no such text is stored."""
        with self._source.held([(namespace, item)]) as present:
            if (namespace, item) not in present:
                raise NotFoundError(f"no text stored as item {item} of {namespace!r}")
            yield self.path(namespace, item, ".txt")

    def load(self, namespace: str, item: int) -> bytes:
        with self.held(namespace, item) as path:
            return path.read_bytes()

    def span(self, namespace: str, item: int, start: int, end: int) -> tuple[int, str]:
        """The text from byte `start` to `end` widened to whole lines or words (`windows.widened`): its first
        byte and its text."""
        with self.held(namespace, item) as path:
            data = path.read_bytes()
        a, b = widened(data, start, end)
        return a, data[a:b].decode("utf-8", errors="replace")

    def widened_hits(self, hits: Sequence[Hit]) -> list[Hit]:
        """Each hit widened to the lines it cuts, as a window is (`windows.widened`), its first token moved with
        its first byte: a chunk cut inside a line (a table's row of 400 characters is longer than a chunk reads)
        is shown from the line's start to its end, where its edges are near. Each text is opened once, and its
        token index mapped only if a first byte moves."""
        by_key: dict[Key, list[int]] = {}
        for k, hit in enumerate(hits):
            if hit.start >= 0:
                by_key.setdefault((hit.namespace, hit.item), []).append(k)
        out = list(hits)
        with self._source.held(by_key) as present:
            for key in present:
                try:
                    with open(self.path(*key, ".txt"), "rb") as f:
                        self._widen_in(f, key, [(k, hits[k]) for k in by_key[key]], out)
                except (OSError, ValueError):
                    continue  # deleted since it was ranked: shown as it was read
        return out

    def _widen_in(self, f: Any, key: Key, mine: list[tuple[int, Hit]], out: list[Hit]) -> None:
        size = os.fstat(f.fileno()).st_size
        tokens: TokenIndex | None = None
        for k, hit in mine:
            end = hit.start + len(hit.text.encode("utf-8"))
            a, b = widened_in(f, size, hit.start, end)
            if (a, b) == (hit.start, end):
                continue
            f.seek(a)
            text = f.read(b - a).decode("utf-8", errors="replace")
            offset = hit.offset
            if a != hit.start:
                if tokens is None:
                    tokens = TokenIndex(np.memmap(self.path(*key, ".idx"), dtype="<u4", mode="r"))
                offset = tokens.token_at(a)
            out[k] = replace(hit, text=text, start=a, offset=offset)

    def window(self, namespace: str, item: int, offset: int, max_tokens: int) -> Window:
        with self.held(namespace, item) as text_path:
            idx_path = self.path(namespace, item, ".idx")
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
            lines = self.lines(namespace, item)
        return Window(
            text=text,
            offset=offset,
            next_offset=end if end < total else None,
            total_tokens=total,
            line=lines.line_at(start_byte),
            end_line=lines.line_at(max(end_byte - 1, start_byte)),
            next_line=lines.starts_line(end_byte) if end < total else None,
        )

    def window_at_line(self, namespace: str, item: int, line: int, max_tokens: int) -> Window:
        with self.held(namespace, item) as text_path:
            lines = self.lines(namespace, item)
            if not 1 <= line <= lines.lines:
                raise InvalidArgumentError(
                    f"line {line} is past the end: item {item} of {namespace!r} has lines 1 to {lines.lines}"
                )
            if max_tokens <= 0:
                raise InvalidArgumentError(f"max_tokens must be at least 1, not {max_tokens}")
            index = self.token_index(namespace, item)
            start_byte = lines.start_of(line)
            first = index.token_at(start_byte)
            end = min(first + max_tokens, index.tokens)
            end_byte = int(index.offsets[end])
            next_line: int | None = None
            if end < index.tokens:
                # End at the last line break in reach, so the next read starts at a line as well.
                last = lines.line_at(end_byte)
                if lines.start_of(last) > start_byte:
                    end_byte, next_line = lines.start_of(last), last
                    end = index.token_at(end_byte)
            with open(text_path, "rb") as f:
                f.seek(start_byte)
                text = f.read(end_byte - start_byte).decode("utf-8")
        return Window(
            text=text,
            offset=first,
            next_offset=end if end_byte < lines.size else None,
            total_tokens=index.tokens,
            line=line,
            end_line=lines.line_at(max(end_byte - 1, start_byte)),
            next_line=next_line,
        )

    def outline(self, namespace: str, item: int) -> list[Entry]:
        """The outline stored with the text, or made now (and kept, unless read-only) for one stored without."""
        with self.held(namespace, item) as text_path:
            path = self.path(namespace, item, ".outline.json")
            try:
                return self._with_records(namespace, item, outline.loads(path.read_bytes()))
            except FileNotFoundError:
                pass
            data = text_path.read_bytes()
            sidecar = json.loads(self.path(namespace, item, ".json").read_bytes())
            entries = outline.build(data, sidecar["kind"], sidecar.get("hint", ""), self.token_index(namespace, item))
            if self._readonly:
                return entries  # the command line beside a server: made, not written
            with self._write_lock:
                if text_path.exists():
                    write_atomically(path, outline.dumps(entries))
            return entries

    def _with_records(self, namespace: str, item: int, entries: list[Entry]) -> list[Entry]:
        """The outline with its records entry (counted over the text's head when it was made) as the records are."""
        if not entries or entries[0].kind != outline.RECORDS:
            return entries
        made = self.records(namespace, item, make=False)
        return [replace(entries[0], title=made.to_text()), *entries[1:]] if made is not None else entries

    def records(self, namespace: str, item: int, *, make: bool = True) -> Summary | None:
        """The summary of the text's records, made now (and kept, unless read-only) if the indexer has not made
        them yet (unless not to `make` them); None for a text that is no table or stream of records."""
        if not make:
            return self._kept_summary(namespace, item)
        return self._records(namespace, item)[0]

    def _kept_summary(self, namespace: str, item: int) -> Summary | None:
        """The summary in the text's `.records.json`, None when there is none (yet)."""
        path = os.path.join(self._raw_path, namespace, f"{item}.records.json")  # not a Path: ~10 µs less a text
        try:
            stat = os.stat(path)
            identity = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            seen = self._summaries.get((namespace, item))
            if seen is not None and seen[0] == identity:
                return seen[1]
            with open(path, "rb") as f:
                kept = json.loads(f.read())
        except (FileNotFoundError, ValueError):
            self._summaries.pop((namespace, item), None)
            return None
        summary = None if kept is None else Summary.from_dict(kept)
        self._summaries[(namespace, item)] = (identity, summary)
        return summary

    def records_data(self, namespace: str, item: int) -> bytes | None:
        """The text's records as a JSON array (None: it has none, or they were over their cap)."""
        summary, data = self._records(namespace, item)
        if summary is None or summary.skipped or data is not None:
            return data
        with self.held(namespace, item):
            try:
                return self.path(namespace, item, ".records").read_bytes()
            except FileNotFoundError:  # made again meanwhile (reindex)
                return self._records(namespace, item, fresh=True)[1]

    def records_bytes(self) -> int:
        """Bytes the records of every text take on disk (counted toward the memory's quota)."""
        if self._records_bytes is None:
            found = self.raw.glob("*/*.records") if self.raw.is_dir() else []
            self._records_bytes = sum(_size(p) for p in found)
        return self._records_bytes

    def forget_records(self, namespace: str) -> None:
        """The namespace is being deleted: its records no longer count."""
        if self.records_written is not None:
            self.records_written += 1
        for key in [k for k in list(self._summaries) if k[0] == namespace]:
            self._summaries.pop(key, None)
        if self._records_bytes is not None:
            self._records_bytes -= sum(_size(p) for p in (self.raw / namespace).glob("*.records"))

    def _records(self, namespace: str, item: int, *, fresh: bool = False) -> tuple[Summary | None, bytes | None]:
        """(summary, the JSON array when it was made by this call)."""
        with self.held(namespace, item) as text_path, self._records_lock:
            meta = self.path(namespace, item, ".records.json")
            if not fresh:
                try:
                    kept = json.loads(meta.read_bytes())
                    return (None if kept is None else Summary.from_dict(kept)), None
                except FileNotFoundError:
                    pass
            sidecar = json.loads(self.path(namespace, item, ".json").read_bytes())
            made = None
            if sidecar.get("searchable", True):
                made = records.make(text_path.read_text("utf-8"), sidecar["kind"], self.records_max_bytes)
            summary, data = made if made is not None else (None, None)
            if not self._readonly:
                self._keep_records(namespace, item, summary, data)
            return summary, data

    def _keep_records(self, namespace: str, item: int, summary: Summary | None, data: bytes | None) -> None:
        path = self.path(namespace, item, ".records")
        with self._write_lock:
            if not self.path(namespace, item, ".txt").exists():
                return  # deleted meanwhile
            before = _size(path)
            if data is not None:
                write_atomically(path, data)
            else:
                path.unlink(missing_ok=True)
            if self._records_bytes is not None:
                self._records_bytes += len(data or b"") - before
            kept = None if summary is None else summary.to_dict()
            write_atomically(self.path(namespace, item, ".records.json"), json.dumps(kept).encode())
            if self.records_written is not None:
                self.records_written += 1

    def lines(self, namespace: str, item: int) -> LineIndex:
        """Where each line starts, stored with the text (found again for a text stored without it)."""
        with self.held(namespace, item) as text_path:
            try:
                return LineIndex.from_bytes(self.path(namespace, item, ".lines").read_bytes())
            except FileNotFoundError:
                return LineIndex.of(text_path.read_bytes())

    def token_index(self, namespace: str, item: int) -> TokenIndex:
        with self.held(namespace, item):
            return TokenIndex.from_bytes(self.path(namespace, item, ".idx").read_bytes())

    def grep(self, pattern: str, keys: Sequence[Key], max_matches: int) -> tuple[list[LineMatch], bool]:
        """Lines matching `pattern`, searched in a worker process under a time limit (see `grep.py`)."""
        if max_matches <= 0:
            raise InvalidArgumentError(f"max_matches must be at least 1, not {max_matches}")
        with self._source.held(keys) as present:
            files = [(self.path(ns, item, ".txt"), ns, item) for ns, item in keys if (ns, item) in present]
            found, truncated = self._grep.grep(pattern, files, max_matches, MAX_LINE_CHARS)
            indexes: dict[Key, TokenIndex] = {}
            matches: list[LineMatch] = []
            for m in found:
                key = (m.namespace, m.item)
                if key not in indexes:
                    try:
                        # Mapped, not read: a hit costs a few pages of the index, not all of it.
                        offsets = np.memmap(self.path(m.namespace, m.item, ".idx"), dtype="<u4", mode="r")
                    except (OSError, ValueError):
                        continue  # deleted since the worker read it
                    indexes[key] = TokenIndex(offsets)
                offset = indexes[key].token_at(m.at)
                matches.append(LineMatch(namespace=m.namespace, item=m.item, line=m.line, offset=offset, text=m.text))
        return matches, truncated

    def read_candidates(self, candidates: Mapping[str, Candidate]) -> None:
        """Each candidate's exact text; a deleted one's stays empty."""
        by_key: dict[Key, list[Candidate]] = {}
        for c in candidates.values():
            by_key.setdefault((c.record.namespace, c.record.item), []).append(c)
        with self._source.held(by_key) as present:
            for (namespace, item), found in by_key.items():
                try:
                    if (namespace, item) not in present:
                        raise FileNotFoundError
                    with open(self.path(namespace, item, ".txt"), "rb") as f:
                        for c in found:
                            if c.record.start >= 0:
                                f.seek(c.record.start)
                                c.text = f.read(c.record.end - c.record.start).decode("utf-8", errors="replace")
                except FileNotFoundError:
                    for c in found:
                        c.text = ""  # deleted while its chunks were still being dropped

    def close(self) -> None:
        self._grep.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _read_offset(f: Any, token: int) -> int:
    f.seek(token * _OFFSET_BYTES)
    return int.from_bytes(f.read(_OFFSET_BYTES), "little")
