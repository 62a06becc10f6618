"""Several servers on one memory name: each gets a memory, a reconnecting one gets its own back, and
siblings nobody uses any more expire."""

from __future__ import annotations

import os
import threading
import time
from contextlib import ExitStack
from dataclasses import replace

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import MemoryLockedError
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.siblings import MAX_SIBLINGS, drop_expired_siblings, open_free, sibling
from offprompt.memory.task_memory import MemorySettings, TaskMemory


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
