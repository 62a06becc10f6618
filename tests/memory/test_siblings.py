"""Several servers on one memory name: each gets a memory, a reconnecting one gets its own back, and
siblings nobody uses any more expire."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import MemoryLockedError
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.settings import MemorySettings
from offprompt.memory.siblings import MAX_SIBLINGS, drop_expired_siblings, open_free, sibling
from offprompt.memory.task_memory import TaskMemory


def test_a_server_that_restarts_while_the_old_one_stops_gets_its_own_memory_back(settings: MemorySettings) -> None:
    # A client reconnecting starts the new server before the old one has let go: the conversation's references
    # name this memory, so the new server waits for it rather than taking a sibling.
    old = TaskMemory.open(settings)
    ref = old.store([TextArtifact(value="from before the restart")], tool="t")
    threading.Timer(0.5, old.close).start()
    new = open_free(settings, wait=10)
    try:
        assert new.name == "test"
        assert new.load(ref.namespace).to_text() == "from before the restart"
    finally:
        new.close()


def test_when_every_sibling_is_in_use_the_error_says_so_and_what_to_do(settings: MemorySettings) -> None:
    with ExitStack() as held:
        for n in range(1, MAX_SIBLINGS + 1):
            lock = DirectoryLock(sibling(settings, n).directory)
            lock.acquire()
            held.callback(lock.release)
        with pytest.raises(MemoryLockedError) as caught:
            open_free(settings, wait=0)
    message = str(caught.value)
    assert f'"test" and its siblings "test-2" to "test-{MAX_SIBLINGS}"' in message
    assert "--memory-name" in message


def test_siblings_nobody_used_within_the_time_to_live_are_dropped(settings: MemorySettings) -> None:
    settings = replace(settings, ttl_seconds=3600)
    old_store = time.time() - 2 * 3600
    for n in (2, 3, 4):
        memory = TaskMemory.open(sibling(settings, n))
        memory.store([TextArtifact(value=f"kept by sibling {n}")], tool="t")
        memory.close()
    for n in (3, 4):  # their last store was two hours ago
        for path in sibling(settings, n).directory.glob("catalog.sqlite3*"):
            os.utime(path, (old_store, old_store))
    held = DirectoryLock(sibling(settings, 4).directory)
    held.acquire()  # a process still uses sibling 4: it expires its own results
    try:
        assert drop_expired_siblings(settings, own="test") == ["test-3"]
    finally:
        held.release()
    assert not sibling(settings, 3).directory.exists()
    assert sibling(settings, 2).directory.is_dir()
    assert sibling(settings, 4).directory.is_dir()


_RACER = r"""
import os, sys, time
from pathlib import Path
from offprompt.errors import MemoryLockedError
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.siblings import drop_expired_siblings, sibling
from offprompt.memory.settings import MemorySettings

role, data_dir, seconds = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
settings = MemorySettings(name="test", data_dir=data_dir, ttl_seconds=60)
directory = sibling(settings, 2).directory
marker = data_dir.parent / "writer"
deadline = time.monotonic() + seconds
held = violations = 0
while time.monotonic() < deadline:
    if role == "drop":
        directory.mkdir(parents=True, exist_ok=True)
        catalog = directory / "catalog.sqlite3"
        catalog.touch()
        os.utime(catalog, (1, 1))  # last stored long ago: expired
        drop_expired_siblings(settings, own="test")
        continue
    lock = DirectoryLock(directory)  # as TaskMemory.open takes it
    try:
        lock.acquire()
    except MemoryLockedError:
        continue
    held += 1
    try:
        # The one writer of this memory: no other process may hold it, and its lock file must stay in place.
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        violations += 1
        lock.release()
        continue
    try:
        for _ in range(20):
            mine = os.fstat(lock._file.fileno())
            try:
                there = os.stat(lock.path)
            except FileNotFoundError:
                violations += 1
                break
            if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
                violations += 1
                break
    finally:
        os.close(fd)
        os.unlink(marker)
        lock.release()
print(held, violations)
"""


def test_dropping_a_sibling_never_leaves_two_writers_on_it_when_processes_race(tmp_path: Path) -> None:
    # One process drops the expired sibling again and again while three others open it: an opener must never
    # hold a lock file in a directory being deleted, nor share the memory with another opener.
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    seconds = "4"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, role, str(data_dir), seconds], stdout=subprocess.PIPE, text=True
        )
        for role in ("drop", "open", "open", "open")
    ]
    outputs = [racer.communicate(timeout=60)[0] for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), outputs
    counts = [tuple(int(x) for x in out.split()) for out in outputs[1:]]
    assert sum(held for held, _ in counts) > 0, "the openers never got the memory: the race was not exercised"
    assert sum(violations for _, violations in counts) == 0, counts
