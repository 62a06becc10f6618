"""The command line reads a memory while its server holds it (`offprompt memory ls`, `show`, `grep`, `query`
beside a running `offprompt serve`): what the server stored, as it stored it, and nothing changed by the reading."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import InvalidArgumentError, MemoryLockedError, NotFoundError
from offprompt.memory import dirlock, task_memory
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

LOG = "".join(f"2026-01-0{day} worker {day}: job finished in {day * 7} s\n" for day in range(1, 8))
NOTES = "The reindex runs nightly.\nzebrafinch checksum failed on shard 4.\nThe backup is weekly.\n"


@pytest.fixture
def served(settings: MemorySettings) -> TaskMemory:
    """The server's memory, two outputs stored and searchable by words."""
    memory = TaskMemory.open(settings)
    memory.store([TextArtifact(value=LOG)], tool="ci.logs")
    memory.store([TextArtifact(value=NOTES)], tool="wiki.notes")
    assert memory.text.wait_chunked(None, timeout=120)
    return memory


def test_a_reader_beside_the_server_sees_what_it_stored(served: TaskMemory, settings: MemorySettings) -> None:
    reader = TaskMemory.open_readonly(settings)
    try:
        listed = {r.tool: r.namespace for r in reader.recent()}
        assert sorted(listed) == ["ci.logs", "wiki.notes"]
        assert reader.load(listed["ci.logs"]).to_text() == LOG
        matches, _ = reader.grep(r"zebrafinch \w+")
        assert [(m.namespace, m.line) for m in matches] == [(listed["wiki.notes"], 2)]
        hits, _ = reader.query("zebrafinch checksum", mode="lexical", top_k=1)
        assert hits[0].namespace == listed["wiki.notes"]
        with pytest.raises(InvalidArgumentError, match="searches by words only: use mode lexical"):
            reader.query("zebrafinch checksum")  # no Chroma beside the server: the default, hybrid, cannot be
        # `offprompt memory ls` shows how far the server's indexing got, read from its files.
        states = reader.text.index_state()
        assert {ns: (s.items, s.chunked_items) for ns, s in states.items()} == {ns: (1, 1) for ns in listed.values()}
    finally:
        reader.close()
        served.close()


def test_reading_beside_the_server_drops_nothing_it_holds(
    served: TaskMemory, settings: MemorySettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry is the server's: a reader with a clock past every output's TTL still lists them, and the server
    still loads them after the reader is gone."""
    monkeypatch.setattr(task_memory.time, "time", lambda: time.time_ns() / 1e9 + 10 * 86400)
    reader = TaskMemory.open_readonly(MemorySettings(name=settings.name, data_dir=settings.data_dir, ttl_seconds=60))
    try:
        assert len(reader.recent()) == 2
        assert reader.expire() == []
    finally:
        reader.close()
    monkeypatch.undo()
    try:
        assert sorted(r.tool for r in served.recent()) == ["ci.logs", "wiki.notes"]
    finally:
        served.close()


def test_a_memory_that_does_not_exist_is_named_with_where_to_look(tmp_path: Path) -> None:
    settings = MemorySettings(name="nosuch", data_dir=tmp_path / "data")
    with pytest.raises(NotFoundError, match="`offprompt memories` lists the ones there are") as caught:
        TaskMemory.open_readonly(settings)
    assert '"nosuch"' in str(caught.value)
    assert not settings.directory.exists()  # looking made nothing


def test_the_holder_of_a_memory_is_named_until_it_lets_go(settings: MemorySettings) -> None:
    """`offprompt memory gc` and a second server say which process holds the memory, by its pid."""
    assert dirlock.holder(settings.directory) is None
    memory = TaskMemory.open(settings)
    try:
        assert dirlock.holder(settings.directory) == str(os.getpid())
        with pytest.raises(MemoryLockedError, match=f"pid {os.getpid()}"):
            TaskMemory.open(settings)
    finally:
        memory.close()
    assert dirlock.holder(settings.directory) is None
