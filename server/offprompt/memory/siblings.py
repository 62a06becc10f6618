"""One memory name for every window: a server that finds its memory in use keeps its results in a sibling.

Clients start a stdio server per window or session: two Claude Code sessions, or Claude Desktop and Cursor with
the same entry, start two servers on one memory, and one Chroma store takes one writer. The second server waits
a moment (a client that reconnects starts the new server while the old one is still stopping, and the
conversation's references name the memory it had), then takes the first free sibling `NAME-2` … `NAME-16`.
Every reference names the memory it is in.

A sibling's results expire only when it is opened, so each start also drops the free siblings whose last
store is older than the memory's time to live (and their collections on a Chroma server).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Final

from offprompt.errors import MemoryLockedError
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.settings import MemorySettings, drop_remote_vectors
from offprompt.memory.task_memory import TaskMemory

__all__ = ["MAX_SIBLINGS", "drop_expired_siblings", "open_free", "sibling"]

logger = logging.getLogger(__name__)

#: How many memories one name spreads over while processes hold it at once: `default`, `default-2`, ….
MAX_SIBLINGS: Final = 16
#: How long a server waits for its own memory before it takes a sibling.
WAIT_SECONDS: Final = 3.0
_POLL_SECONDS = 0.1


def sibling(settings: MemorySettings, n: int) -> MemorySettings:
    return settings if n == 1 else replace(settings, name=f"{settings.name}-{n}")


def open_free(settings: MemorySettings, wait: float = WAIT_SECONDS) -> TaskMemory:
    """The named memory or, while other processes hold it, the first free sibling. Raises MemoryLockedError
    when all are in use."""
    deadline = time.monotonic() + wait
    while True:
        try:
            memory = TaskMemory.open(settings)
            break
        except MemoryLockedError:
            if time.monotonic() >= deadline:
                memory = _first_free_sibling(settings)
                break
            time.sleep(_POLL_SECONDS)
    threading.Thread(
        target=drop_expired_siblings, args=(settings, memory.name), name="offprompt-siblings", daemon=True
    ).start()
    return memory


def _first_free_sibling(settings: MemorySettings) -> TaskMemory:
    for n in range(2, MAX_SIBLINGS + 1):
        candidate = sibling(settings, n)
        try:
            memory = TaskMemory.open(candidate)
        except MemoryLockedError:
            continue
        logger.warning(
            'memory "%s" is in use by another offprompt process; this one keeps its results in "%s"',
            settings.name,
            candidate.name,
        )
        return memory
    raise MemoryLockedError(
        f'the memory "{settings.name}" and its siblings "{settings.name}-2" to "{settings.name}-{MAX_SIBLINGS}" in '
        f"{settings.data_dir} are all in use by other offprompt processes. Stop some of them, or give this one "
        "its own --memory-name NAME (or another --data-dir)."
    )


def drop_expired_siblings(settings: MemorySettings, own: str) -> list[str]:
    """Delete the free siblings whose last store is older than the time to live; the names dropped."""
    if settings.ttl_seconds is None:
        return []
    dropped: list[str] = []
    for n in range(2, MAX_SIBLINGS + 1):
        candidate = sibling(settings, n)
        directory = candidate.directory
        if candidate.name == own or not directory.is_dir():
            continue
        lock = DirectoryLock(directory)
        try:
            lock.acquire()
        except MemoryLockedError:
            continue  # in use: its own process expires it
        try:
            if time.time() - _last_store(directory) <= settings.ttl_seconds:
                continue
            try:
                drop_remote_vectors(candidate)
            except Exception as exc:  # any client's failure: the server is away or refuses
                logger.warning(
                    "keeping the expired sibling %r until its vectors can be dropped: %s", candidate.name, exc
                )
                continue
            # Moved away while locked, deleted after: an opener now finds no directory (and makes a fresh one)
            # or a lock file no longer at its path (and takes it again), never files being deleted.
            doomed = directory.with_name(f".{directory.name}.dropped-{os.getpid()}-{threading.get_ident()}")
            try:
                directory.rename(doomed)
            except OSError:
                continue  # Windows will not move a directory with open files: try at the next start
        finally:
            lock.release()
        shutil.rmtree(doomed, ignore_errors=True)
        dropped.append(candidate.name)
    if dropped:
        logger.info("dropped expired sibling memories: %s", ", ".join(dropped))
    return dropped


def _last_store(directory: Path) -> float:
    """When the memory last changed: its catalog (and the catalog's write-ahead log) is written on every store."""
    times = [p.stat().st_mtime for p in directory.glob("catalog.sqlite3*")]
    return max(times, default=directory.stat().st_mtime)
