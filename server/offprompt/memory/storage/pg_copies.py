"""A shared memory's local copies of the texts a server read (`raw/`, the layout `local_texts.LocalTexts` reads),
fetched from its database, written atomically and kept to `cache_bytes`: the least recently read go first, never
one a read holds."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Final

from offprompt.memory.storage.files import FILE_MODE, private_dir
from offprompt.memory.storage.pg import PgDatabase


def write_copy(path: Path, data: bytes) -> None:
    """Write this server's copy of a stored file: atomically (readers see all or nothing) but not flushed to
    disk, since PostgreSQL holds the text durably and a lost copy is fetched again."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)


class ReadThrough:
    """This server's copies of stored texts (the `TextSource` its reads go through), kept to `limit` bytes: a
    missing one is fetched from the database, the least recently read go first, and a copy a read holds is never
    evicted under it."""

    _SUFFIXES: Final = (".txt", ".idx", ".lines", ".outline.json", ".json", ".records", ".records.json")

    def __init__(self, raw: Path, limit: int, db: PgDatabase) -> None:
        self._raw = raw
        self._limit = limit
        self._db = db
        self._lock = threading.Lock()
        self._order: OrderedDict[tuple[str, int], int] = OrderedDict()  # oldest read first, with its bytes
        self._pins: Counter[tuple[str, int]] = Counter()  # copies reads hold now
        self._bytes = 0
        found = []
        for text in raw.glob("*/*.txt") if raw.is_dir() else []:
            with contextlib.suppress(FileNotFoundError, ValueError):
                found.append((text.stat().st_atime, text.parent.name, int(text.name.removesuffix(".txt"))))
        for _, namespace, item in sorted(found):
            self.added(namespace, item)

    @contextlib.contextmanager
    def held(self, keys: Collection[tuple[str, int]]) -> Iterator[set[tuple[str, int]]]:
        wanted = set(keys)
        with self._lock:  # pinned before anything is fetched: no eviction can take a copy between the two
            self._pins.update(wanted)
            for key in wanted:
                if key in self._order:
                    self._order.move_to_end(key)
        try:
            present = {k for k in wanted if self._path(k, ".txt").exists() or self._fetch(*k)}
            yield present
        finally:
            with self._lock:
                self._pins.subtract(wanted)
                for key in wanted:
                    if self._pins[key] <= 0:
                        del self._pins[key]

    def _path(self, key: tuple[str, int], suffix: str) -> Path:
        return self._raw / key[0] / f"{key[1]}{suffix}"

    def _size(self, key: tuple[str, int]) -> int:
        total = 0
        for suffix in self._SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                total += self._path(key, suffix).stat().st_size
        return total

    def added(self, namespace: str, item: int) -> None:
        """A copy was written: count it, and evict the least recently read that no read holds past the bound."""
        key = (namespace, item)
        size = self._size(key)
        with self._lock:
            self._bytes += size - self._order.pop(key, 0)
            self._order[key] = size
            while self._bytes > self._limit:
                victim = next((k for k in self._order if k != key and k not in self._pins), None)
                if victim is None:
                    break
                self._bytes -= self._order.pop(victim)
                # Under the lock: a read that pins it next must find it gone (and fetch it), not half removed.
                for suffix in self._SUFFIXES:  # the text first: without it, the copy counts as absent
                    with contextlib.suppress(FileNotFoundError):
                        self._path(victim, suffix).unlink()

    def _fetch(self, namespace: str, item: int) -> bool:
        """Copy a stored text (and its indexes) from the database; False if there is none."""
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT data, token_index, line_index, outline, sidecar FROM texts WHERE namespace = %s AND item = %s",
                (namespace, item),
            ).fetchone()
        if row is None:
            return False
        data, tokens, lines, entries, sidecar = row
        entries = None if entries is None else bytes(entries)
        self.write(namespace, item, bytes(data), bytes(tokens), bytes(lines), entries, sidecar.encode())
        return True

    def write(
        self, namespace: str, item: int, text: bytes, tokens: bytes, lines: bytes, entries: bytes | None, sidecar: bytes
    ) -> None:
        """Write a stored text's copy (its outline's `entries` if it has one), the text last (its presence means
        "copied"), and count it."""
        files = {".idx": tokens, ".lines": lines, ".outline.json": entries, ".json": sidecar, ".txt": text}
        for suffix, data in files.items():
            if data is not None:
                write_copy(self._path((namespace, item), suffix), data)
        self.added(namespace, item)

    def sweep(self, stored: Collection[str], min_age: float) -> list[str]:
        """Drop the copies of the namespaces not `stored` (deleted or expired through another server), but for
        those younger than `min_age` seconds (their store may still be writing them); the namespaces dropped."""
        now, dropped = time.time(), []
        for folder in self._raw.iterdir() if self._raw.is_dir() else []:
            try:
                old = now - folder.stat().st_mtime >= min_age
            except FileNotFoundError:
                continue
            if folder.is_dir() and folder.name not in stored and old:
                shutil.rmtree(folder, ignore_errors=True)
                self.dropped(folder.name)
                dropped.append(folder.name)
        return dropped

    def dropped(self, namespace: str) -> None:
        """The namespace's copies were removed (deleted, or swept)."""
        with self._lock:
            for key in [k for k in self._order if k[0] == namespace]:
                self._bytes -= self._order.pop(key)
