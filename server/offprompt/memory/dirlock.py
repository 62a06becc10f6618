"""An exclusive lock on a memory's data directory, so two processes never write one Chroma store."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, NoReturn

from offprompt.errors import MemoryLockedError
from offprompt.private_dirs import private_dir

LOCK_FILE = ".offprompt.lock"
_ATTEMPTS = 50


def _same_file(f: IO[str], path: Path) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(f.fileno())
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


class DirectoryLock:
    """Held from `acquire()` until `release()` or the process ends (the OS drops it on exit)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        # A sibling being dropped is renamed away under its lock (see siblings.py): a lock taken on a file that
        # is no longer at our path guards nothing, so take it again on the file that is there now.
        for _ in range(_ATTEMPTS):
            f = self._open()
            try:
                _lock(f)
            except OSError:
                self._refuse(f)
            if _same_file(f, self.path):
                break
            f.close()
        else:
            raise MemoryLockedError(
                f"the memory in {self.path.parent} kept being removed while this process opened it "
                "(another offprompt process dropping an expired sibling): start this one again."
            )
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._file = f

    def _open(self) -> IO[str]:
        for _ in range(_ATTEMPTS):
            try:
                private_dir(self.path.parent)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
                return open(fd, "a+", encoding="utf-8")
            except (FileNotFoundError, FileExistsError):
                continue  # the directory vanished between the two calls: make it again
        raise MemoryLockedError(
            f"the memory in {self.path.parent} kept being removed while this process opened it "
            "(another offprompt process dropping an expired sibling): start this one again."
        )

    def _refuse(self, f: IO[str]) -> NoReturn:
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
