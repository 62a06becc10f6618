"""What `offprompt memory gc` and memory_list answer, what `offprompt stats` keeps of a process that never
closed its memory, a reference whose intent finds nothing, and a query that cannot be answered as asked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import mcp_types as mt
import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import InvalidArgumentError
from offprompt.memory import task_memory
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory


def test_gc_drops_expired_outputs_and_another_writers_half_written_files(
    memory: TaskMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`offprompt memory gc` reports each step's progress; a temporary file another process left mid-write
    goes, one this process may still be writing stays."""
    assert memory.directory is not None
    memory.ttl_seconds = 60
    old = [memory.store([TextArtifact(value=f"old note {i}")], tool="t").namespace for i in range(2)]
    left = memory.directory / "text" / ".payload.txt.999999.1.tmp"  # a killed process's
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_text("half")
    own = memory.directory / "text" / f".payload.txt.{os.getpid()}.1.tmp"
    own.write_text("being written")
    later = time.time() + 61
    monkeypatch.setattr(task_memory.time, "time", lambda: later)
    told: list[tuple[str, int, int]] = []
    dropped = memory.gc(lambda step, done, total: told.append((step, done, total)))
    assert sorted(dropped["expired"]) == sorted(old)
    assert dropped["leftovers"] == [str(left)]
    assert ("expired", 2, 2) in told
    assert not left.exists()
    assert own.exists()
    assert memory.recent() == []


def test_a_reference_says_when_its_intent_matches_no_passage(memory: TaskMemory) -> None:
    """The model asked for something the output does not hold: the reference says so and where to look next,
    rather than showing passages that do not answer."""
    text = "".join(f"line {i}: the build of module {i} succeeded\n" for i in range(200))
    reference = memory.store([TextArtifact(value=text)], tool="ci.build", intent="kubernetes ingress certificate")
    shown = "\n".join(block.text for block in reference.to_result().content if isinstance(block, mt.TextContent))
    assert "No passage matches the words of the intent 'kubernetes ingress certificate'" in shown
    assert "memory_query" in shown
    assert reference.meta()["intent"]["passages"] == []


def test_a_listing_shows_a_call_with_many_arguments_cut_and_says_how_many_it_left_out(memory: TaskMemory) -> None:
    """memory_list stays small whatever a call took: the first arguments, each cut, then how many more."""
    arguments = {f"field_{i:02}": "x" * 1000 for i in range(25)}
    stored = memory.store([TextArtifact(value="a form's echo")], tool="forms.submit", arguments=arguments)
    (listed,) = memory.recent()
    shown = listed.listed_arguments
    assert len(shown) == 21
    assert shown["…"] == "[5 more arguments not shown]"
    assert shown["field_00"].endswith("… [cut: 1,000 characters]")
    assert memory.get(stored.namespace).arguments == arguments  # the whole call is kept; only the listing is cut


@pytest.mark.parametrize(
    ("query", "top_k", "mode", "said"),
    [
        ("   ", 5, "hybrid", "query is empty: say what you are looking for"),
        ("build", 0, "hybrid", "top_k must be at least 1, not 0"),
        ("build", 5, "fuzzy", "mode must be one of"),
    ],
)
def test_a_query_it_cannot_answer_says_what_to_change(
    memory: TaskMemory, query: str, top_k: int, mode: str, said: str
) -> None:
    memory.store([TextArtifact(value="the build passed\n")], tool="ci")
    with pytest.raises(InvalidArgumentError, match=re.escape(said)):
        memory.query(query, top_k=top_k, mode=mode)  # type: ignore[arg-type]


#: A script that counts a stored result and ends without closing its memory (an `offprompt.wrap` server's way).
UNCLOSED = """
import sys
from pathlib import Path
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
memory = TaskMemory.open(MemorySettings(name="test", data_dir=Path(sys.argv[1])))
memory.usage.stored("fs", "read_file", 5000, 1200, 90)
"""


def test_a_process_that_never_closes_its_memory_keeps_its_last_counts(settings: MemorySettings) -> None:
    """`offprompt stats` after a server that ended without closing its memory still shows what it stored."""
    run = subprocess.run(
        [sys.executable, "-c", UNCLOSED, str(settings.data_dir)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    memory = TaskMemory.open(settings)
    try:
        assert [(r.tool, r.kind, r.count, r.tokens) for r in memory.catalog.usage()] == [
            ("read_file", "stored", 1, 1200)
        ]
    finally:
        memory.close()
