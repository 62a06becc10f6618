"""A shared memory's local copies of the texts a server read (`raw/`, the layout `local_texts.LocalTexts` reads),
written atomically and kept to `cache_bytes`: the least recently read go first, never one a read holds."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Final

from offprompt.memory.storage.files import FILE_MODE, private_dir


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
    missing one is fetched from the database (`fetch`), the least recently read go first, and a copy a read holds
    is never evicted under it."""

    _SUFFIXES: Final = (".txt", ".idx", ".lines", ".outline.json", ".json", ".records", ".records.json")

    def __init__(self, raw: Path, limit: int, fetch: Callable[[str, int], bool]) -> None:
        self._raw = raw
        self._limit = limit
        self._fetch = fetch
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

    def dropped(self, namespace: str) -> None:
        """The namespace's copies were removed (deleted, or swept)."""
        with self._lock:
            for key in [k for k in self._order if k[0] == namespace]:
                self._bytes -= self._order.pop(key)
