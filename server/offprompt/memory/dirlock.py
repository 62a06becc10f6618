"""An exclusive lock on a memory's data directory, so two processes never write one Chroma store."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

from offprompt.errors import MemoryLockedError

LOCK_FILE = ".offprompt.lock"


class DirectoryLock:
    """Held from `acquire()` until `release()` or the process ends (the OS drops it on exit)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open while locked
        try:
            _lock(f)
        except OSError:
            try:
                f.seek(0)
                holder = f.read().strip() or "unknown"
            except OSError:  # Windows: the holder's lock covers the byte the pid starts at
                holder = "unknown"
            f.close()
            raise MemoryLockedError(
                f"the memory in {self.path.parent} is in use by another offprompt process (pid {holder}). "
                "Give this one its own memory with --memory-name NAME (or another --data-dir), "
                "or stop the other process first."
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the file drops the lock
            self._file = None


if sys.platform == "win32":
    import msvcrt

    def _lock(f: IO[str]) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)

else:
    import fcntl

    def _lock(f: IO[str]) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def holder(directory: Path) -> str | None:
    """The pid of the process that holds the memory in `directory` ("unknown" if it can't be read), or None
    when no process does."""
    path = directory / LOCK_FILE
    if not path.exists():
        return None
    with open(path, "r+", encoding="utf-8") as f:
        try:
            _lock(f)
        except OSError:
            try:
                return f.read().strip() or "unknown"
            except OSError:
                return "unknown"
    return None  # closing the file dropped the lock we took to find out
