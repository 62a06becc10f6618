"""A memory survives its process: a fresh interpreter reads and queries what an earlier one stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from offprompt.artifacts import ImageArtifact, JsonArtifact, TextArtifact
from offprompt.errors import MemoryLockedError
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

from ..support import offprompt_command

READER = """
import json, sys
from pathlib import Path
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
memory = TaskMemory.open(MemorySettings(name="test", data_dir=Path(sys.argv[1])))
assert memory.text.wait_indexed(timeout=300)
out = {}
for record in memory.recent():
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


def test_a_second_server_on_a_memory_in_use_keeps_its_results_in_a_sibling(
    settings: MemorySettings, tmp_path: Path
) -> None:
    # Two Claude Code sessions with the same entry start two servers on one memory: both must serve, each
    # reference naming the memory it is in, and the first process's data stays untouched.
    memory = TaskMemory.open(settings)
    try:
        ref = memory.store([TextArtifact(value="precious")], tool="t")
        command = offprompt_command("serve", "--memory-name", "test", "--data-dir", str(settings.data_dir))
        second = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        calls = [
            ("memory_list", {}),
            ("memory_load", {"memory_name": "test", "artifact_namespace": ref.namespace}),
        ]
        out, err = second.communicate(_stdio_lines(calls), timeout=60)
        assert second.returncode == 0, err.decode()
        assert 'memory "test" is in use by another offprompt process' in err.decode()
        answers = {a.get("id"): a for a in map(json.loads, out.decode().splitlines())}
        assert answers[2]["result"]["content"][0]["text"] == 'Memory "test-2" holds nothing yet.'
        refused = answers[3]["result"]
        assert refused["isError"]
        assert 'this offprompt process holds memory "test-2"' in refused["content"][0]["text"]
        assert "call the tool that made it again" in refused["content"][0]["text"]
        assert memory.load(ref.namespace).to_text() == "precious"
        assert (settings.data_dir / "test-2").is_dir()
    finally:
        memory.close()


def _stdio_lines(calls: list[tuple[str, dict[str, str]]]) -> bytes:
    """A 2025-11-25 client's whole stdio session: initialize, then each tool call (ids 2, 3, …)."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}
    messages: list[dict[str, object]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for n, (name, arguments) in enumerate(calls, start=2):
        messages.append(
            {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def test_the_library_refuses_a_memory_in_use(settings: MemorySettings) -> None:
    # A program that opens a memory by name gets that memory or an error saying what to do, never another one.
    memory = TaskMemory.open(settings)
    try:
        with pytest.raises(MemoryLockedError, match="--memory-name"):
            TaskMemory.open(settings)
    finally:
        memory.close()


def test_expired_namespaces_are_dropped(settings: MemorySettings) -> None:
    memory = TaskMemory.open(settings)
    try:
        memory.ttl_seconds = 0.001
        old = memory.store([TextArtifact(value="old")], tool="t")
        memory.ttl_seconds = None
        memory.store([TextArtifact(value="new")], tool="t")
        kept = {r.namespace for r in memory.recent()}
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
        kept = {r.namespace for r in memory.recent()}
        assert kept == {refs[2].namespace}
    finally:
        memory.close()


BOTH_INDEXERS_AT_ONCE = """
import sys, threading
from pathlib import Path
from offprompt.memory.chunking.units import count_wordpieces
from offprompt.memory.storage.dense import ChromaDenseIndex, ChromaLocation, EmbeddingSpec
dense = ChromaDenseIndex("test", ChromaLocation("ephemeral"), EmbeddingSpec(), Path(sys.argv[1]) / "tombstones")
failed = []
together = threading.Barrier(2)
def run(job):
    together.wait()
    try:
        job()
    except BaseException as exc:
        failed.append(repr(exc))
jobs = [lambda: count_wordpieces(["a word"]), dense.open]  # the chunker's first step, the embedder's
threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(failed)
"""


def test_the_chunker_and_the_embedder_starting_together_both_reach_chroma(tmp_path: Path) -> None:
    # Before: a restart that resumed indexing started both threads at once; they entered Chroma's package tree by
    # different modules and Python's import locks refused one ("deadlock detected by _ModuleLock"), so the text
    # being chunked stayed unsearchable, restart after restart. A fresh interpreter: imports are once per process.
    ran = subprocess.run(
        [sys.executable, "-c", BOTH_INDEXERS_AT_ONCE, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[]"
