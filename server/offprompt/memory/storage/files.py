"""A memory's files on disk: private to the user who runs offprompt, written atomically, swept when opened.

Stored results may be sensitive (`"off_prompt": "always"`), so a memory's directory is 0700 and its files
0600. The modes are set on each file and directory as it is made, not through the process umask: the
downstream servers offprompt starts would inherit a umask.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from offprompt.private_dirs import DIR_MODE as DIR_MODE
from offprompt.private_dirs import private_dir as private_dir

FILE_MODE: Final = 0o600
#: What `write_atomically` names its temporary files: `.{name}.{pid}.{thread}.tmp`.
_TEMPORARY = re.compile(r"^\..+\.\d+\.\d+\.tmp$")


def private_file(path: Path) -> None:
    """Create `path` empty and 0600 unless it exists (SQLite then gives its -wal and -shm files the same mode)."""
    private_dir(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file, flush it to disk, then rename: readers see all or nothing."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def secure_and_sweep(directory: Path) -> int:
    """Set the private modes on everything under `directory` (memories made before they were private, files
    Chroma writes with the default mode), and remove the temporary files of writes a killed process left
    half done. Only for a directory this process holds the lock of. Returns how many bytes were swept."""
    swept = 0
    os.chmod(directory, DIR_MODE)
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            _chmod(Path(root, name), DIR_MODE)
        for name in files:
            path = Path(root, name)
            if _TEMPORARY.match(name):
                try:
                    swept += path.stat().st_size
                    path.unlink()
                except FileNotFoundError:
                    pass
                continue
            _chmod(path, FILE_MODE)
    return swept


def _chmod(path: Path, mode: int) -> None:
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode) and stat.S_IMODE(os.stat(path).st_mode) != mode:
            os.chmod(path, mode)
    except FileNotFoundError:
        pass


def disk_bytes(path: Path) -> int:
    """What the files under `path` (or the file itself) occupy, in bytes of their sizes."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # deleted while we walk
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def sqlite_used_bytes(path: Path, free_bytes: Callable[[], int] | None = None) -> int:
    """What a SQLite file and its WAL occupy, less the database's free pages (the next writes reuse those).
    `free_bytes` counts those on a connection already open (`SqliteDb.free_bytes`); without it, one is opened."""
    if not path.exists():
        return 0
    wal = path.with_name(path.name + "-wal")
    occupied = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    try:
        free = free_bytes() if free_bytes is not None else _free_bytes(path)
    except sqlite3.Error:
        return occupied
    return max(occupied - free, 0)


def _free_bytes(path: Path) -> int:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    try:
        return free_pages_bytes(db)
    finally:
        db.close()


def free_pages_bytes(db: sqlite3.Connection) -> int:
    """The bytes of a database's free pages, as its connection sees the last committed state."""
    page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
    return page_size * int(db.execute("PRAGMA freelist_count").fetchone()[0])
