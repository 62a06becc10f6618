"""A memory survives its process: a fresh interpreter reads and queries what an earlier one stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from offprompt.artifacts import ImageArtifact, JsonArtifact, TextArtifact
from offprompt.memory import MemorySettings, TaskMemory

from .support import offprompt_command

READER = """
import json, sys
from pathlib import Path
from offprompt.memory import MemorySettings, TaskMemory
memory = TaskMemory.open(MemorySettings(name="test", data_dir=Path(sys.argv[1])))
assert memory.text.wait_indexed(timeout=300)
out = {}
for record in memory.list():
    out[record.namespace] = [memory.load(record.namespace, i.item).to_text() for i in record.items]
hits, indexing = memory.query("which fruit is yellow and curved?", top_k=1)
out["_query"] = [hits[0].namespace, hits[0].text, indexing]
memory.close()
print(json.dumps(out))
"""


def test_every_namespace_is_loadable_and_queryable_after_a_restart(settings: MemorySettings) -> None:
    memory = TaskMemory.open(settings)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 500
    fruit = memory.store(
        [TextArtifact(value="A banana is a long curved yellow fruit.\nA cherry is small and red.\n")], tool="kb.fruit"
    )
    mixed = memory.store(
        [JsonArtifact(value={"cars": ["volvo", "saab"]}), ImageArtifact(value=png, mime_type="image/png")],
        tool="kb.cars",
    )
    memory.close()  # closed before the indexer finished: the next process must finish it

    run = subprocess.run(
        [sys.executable, "-c", READER, str(settings.data_dir)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out[fruit.namespace] == ["A banana is a long curved yellow fruit.\nA cherry is small and red.\n"]
    assert out[mixed.namespace][0] == '{"cars": ["volvo", "saab"]}'
    assert out[mixed.namespace][1] == f"[image image/png, {len(png)} bytes]"
    assert out["_query"][0] == fruit.namespace
    assert "banana" in out["_query"][1]
    assert out["_query"][2] == []

    reopened = TaskMemory.open(settings)
    try:
        blob = reopened.load(mixed.namespace, 1)
        assert isinstance(blob, ImageArtifact)
        assert blob.value == png
    finally:
        reopened.close()


def test_a_second_process_on_a_locked_memory_is_told_what_to_do(settings: MemorySettings, tmp_path: Path) -> None:
    memory = TaskMemory.open(settings)
    try:
        ref = memory.store([TextArtifact(value="precious")], tool="t")
        run = subprocess.run(
            offprompt_command("serve", "--memory-name", "test", "--data-dir", str(settings.data_dir)),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert run.returncode == 2
        assert "in use by another offprompt process" in run.stderr
        assert "--memory-name" in run.stderr
        assert memory.load(ref.namespace).to_text() == "precious"
    finally:
        memory.close()


def test_expired_namespaces_are_dropped(settings: MemorySettings) -> None:
    memory = TaskMemory.open(settings)
    try:
        memory.ttl_seconds = 0.001
        old = memory.store([TextArtifact(value="old")], tool="t")
        memory.ttl_seconds = None
        memory.store([TextArtifact(value="new")], tool="t")
        kept = {r.namespace for r in memory.list()}
        assert len(kept) == 1
        assert old.namespace not in kept
    finally:
        memory.close()


@pytest.mark.parametrize("quota", [1500])
def test_the_oldest_namespaces_go_when_over_quota(settings: MemorySettings, quota: int) -> None:
    memory = TaskMemory.open(settings)
    try:
        memory.max_bytes = quota
        refs = [memory.store([TextArtifact(value=f"{i}" * 1000)], tool="t") for i in range(3)]
        kept = {r.namespace for r in memory.list()}
        assert kept == {refs[2].namespace}
    finally:
        memory.close()
