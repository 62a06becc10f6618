"""One SQLite connection shared by threads: the catalog and the lexical index both keep theirs this way."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from offprompt.memory.storage.files import free_pages_bytes, private_file


class SqliteDb:
    """A connection in autocommit mode behind a lock; `transaction()` groups writes atomically."""

    def __init__(
        self, path: Path, schema: str, pragmas: Iterable[str] = ("journal_mode = WAL",), *, readonly: bool = False
    ) -> None:
        self.lock = threading.Lock()
        if readonly:
            # For the command line while a server holds the memory: no write, no schema change, no writer's lock.
            if not path.exists():
                raise FileNotFoundError(path)
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            return
        private_file(path)  # 0600 before SQLite makes it 0644 (its -wal and -shm files copy the mode)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        with self.lock:
            for pragma in pragmas:
                self.db.execute(f"PRAGMA {pragma}")
            self.db.executescript(schema)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def reclaim(self) -> None:
        """Move the write-ahead log into the database and truncate it, so space freed by deletes is counted
        free (and reused) rather than held by the log."""
        with self.lock:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def free_bytes(self) -> int:
        """The database's free pages in bytes, on this connection: opening another for it cost more than the
        count (every memory_list measures the quota)."""
        with self.lock:
            return free_pages_bytes(self.db)

    def close(self) -> None:
        with self.lock:
            self.db.close()
