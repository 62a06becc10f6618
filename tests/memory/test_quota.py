"""The quota (`max_bytes`): what the memory really occupies on disk, and never a reference that dies."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import replace

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import NotFoundError, QuotaError
from offprompt.memory import quota, task_memory
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage.files import disk_bytes
from offprompt.memory.task_memory import TaskMemory


def _log(seed: int, lines: int = 300) -> str:
    rng = random.Random(seed)
    words = "alpha beta gamma delta timeout connection server request retry error socket buffer".split()  # noqa: SIM905
    return "\n".join(" ".join(f"{rng.choice(words)}{rng.randint(0, 999)}" for _ in range(12)) for _ in range(lines))


def test_a_result_bigger_than_the_whole_quota_is_refused_and_the_others_stay(settings: MemorySettings) -> None:
    memory = TaskMemory.open(replace(settings, max_bytes=100_000, chroma="ephemeral"))
    try:
        small = memory.store([TextArtifact(value="kept " * 2000)], tool="t.small")
        with pytest.raises(QuotaError) as refused:
            memory.store([TextArtifact(value="x" * 150_000)], tool="t.huge")
        message = str(refused.value)
        assert "150,000 bytes" in message
        assert "max_bytes" in message
        assert "100,000" in message
        # No reference was handed out for it, nothing of it is left on disk, and the earlier one still reads.
        assert [r.namespace for r in memory.recent()] == [small.namespace]
        assert memory.text.namespaces() == {small.namespace}
        assert memory.load(small.namespace).to_text() == "kept " * 2000
    finally:
        memory.close()


def test_a_reference_just_handed_out_survives_the_next_listing_even_when_its_indexes_fill_the_quota(
    settings: MemorySettings,
) -> None:
    memory = TaskMemory.open(replace(settings, max_bytes=60_000, chroma="ephemeral"))
    try:
        ref = memory.store([TextArtifact(value=_log(1))], tool="t")  # 35 KB, well under the quota alone
        assert memory.text.wait_chunked(None, timeout=120)
        assert memory.used_bytes() > 60_000  # with its lexical index and the catalog it is over
        assert [r.namespace for r in memory.recent()] == [ref.namespace]
        assert memory.window(ref.namespace, 0, 0, 10).text
    finally:
        memory.close()


def test_the_quota_counts_the_indexes_and_the_oldest_outputs_go_first(settings: MemorySettings) -> None:
    memory = TaskMemory.open(replace(settings, max_bytes=None, chroma="ephemeral"))
    try:
        refs = []
        for seed in range(4):
            refs.append(memory.store([TextArtifact(value=_log(seed))], tool=f"t.{seed}"))
            assert memory.text.wait_chunked(None, timeout=120)
        raw = sum(r.record.bytes for r in refs)
        on_disk = disk_bytes(settings.directory)
        assert memory.used_bytes() > raw * 1.5  # the token and lexical indexes and the catalog count too
        assert memory.used_bytes() >= 0.8 * on_disk
        # A quota the payloads alone fit in, but not with their indexes: the oldest go until the rest fits.
        memory.max_bytes = (raw + memory.used_bytes()) // 2
        kept = [r.namespace for r in memory.recent()]
        assert 0 < len(kept) < 4
        assert kept == [r.namespace for r in reversed(refs)][: len(kept)]  # newest first; the oldest went
        assert memory.used_bytes() <= memory.max_bytes
        with pytest.raises(NotFoundError):
            memory.load(refs[0].namespace)
    finally:
        memory.close()


def test_clean_up_counts_what_it_drops_in_its_progress_and_its_log(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Payloads whose namespace never reached the catalog (a crash mid-store), then namespaces past their TTL.
    for orphan in ("orphan1", "orphan2"):
        memory.text.store(orphan, 0, TextArtifact(value="left behind by a crash"))
    told: list[tuple[str, int, int]] = []
    assert memory.gc(lambda step, done, total: told.append((step, done, total)))["orphans"] == ["orphan1", "orphan2"]
    assert told == [("orphans", 1, 2), ("orphans", 2, 2)]
    clock = [time.time()]
    monkeypatch.setattr(task_memory.time, "time", lambda: clock[0])
    memory.ttl_seconds = 60
    for i in range(2):
        memory.store([TextArtifact(value=f"note {i}")], tool="t")
    clock[0] += 61
    with caplog.at_level(logging.INFO, logger="offprompt.memory.task_memory"):
        newest = memory.store([TextArtifact(value="the newest")], tool="t").namespace  # expiry runs on each store
    assert [r.namespace for r in memory.recent()] == [newest]
    assert f"expired 2 namespaces from memory {memory.name!r}" in caplog.text


def test_listings_measure_the_quota_every_few_seconds_and_stores_every_time(
    settings: MemorySettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = TaskMemory.open(replace(settings, max_bytes=None, chroma="ephemeral"))
    clock = [1000.0]
    monkeypatch.setattr(task_memory.time, "monotonic", lambda: clock[0])
    try:
        old = memory.store([TextArtifact(value=_log(1))], tool="t.old").namespace
        new = memory.store([TextArtifact(value=_log(2))], tool="t.new").namespace
        assert memory.text.wait_chunked(None, timeout=120)
        memory.recent()  # measured now
        measured = memory.quota.used_bytes
        calls: list[int] = []
        monkeypatch.setattr(memory.quota, "used_bytes", lambda: calls.append(1) or measured())
        memory.recent()
        assert calls == []  # a listing right after a listing does not measure again
        memory.quota.max_bytes = measured() // 2  # as if the indexes had grown past the quota meanwhile
        memory.recent()
        assert calls == []
        clock[0] += quota.QUOTA_RECHECK_SECONDS
        assert [r.namespace for r in memory.recent()] == [new]  # a few seconds on, the oldest goes
        with pytest.raises(NotFoundError):
            memory.load(old)
    finally:
        memory.close()
