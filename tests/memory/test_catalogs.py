"""What the catalog remembers of a stored output, the same in a memory of files and in a shared one (PostgreSQL):
whose output it is and whether it is sensitive (who may receive it), where it was passed (memory_list's "passed
to"), and the counts `offprompt stats` sums over a window."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.memory import task_memory
from offprompt.memory.catalog import Flow, Origin
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory


@pytest.fixture(params=["files", pytest.param("postgres", marks=pytest.mark.postgres)])
def either(request: pytest.FixtureRequest, settings: MemorySettings) -> Iterator[TaskMemory]:
    """A memory of files, or a shared one in PostgreSQL (opened as a server opens it)."""
    if request.param == "files":
        memory = TaskMemory.open(settings)
        yield memory
        memory.close()
    else:
        open_memory: Callable[..., TaskMemory] = request.getfixturevalue("open_memory")
        yield open_memory(index=False)


def test_a_sensitive_outputs_origin_is_remembered(either: TaskMemory) -> None:
    """An `always` output may go only to the server that produced it: the memory keeps which one that was."""
    secret = either.store([TextArtifact(value="rows of a private table")], tool="db.query", origin=Origin("db", True))
    plain = either.store([TextArtifact(value="the weather")], tool="weather.now")
    assert either.origin(secret.namespace) == Origin("db", True)
    assert either.origin(plain.namespace) is None


def test_where_an_output_was_passed_is_listed_oldest_first_and_not_for_a_deleted_one(either: TaskMemory) -> None:
    kept = either.store([TextArtifact(value="a b c\n" * 3)], tool="fs.read").namespace
    gone = either.store([TextArtifact(value="x")], tool="fs.read").namespace
    either.delete(gone)
    either.record_flows([(kept, Flow(2.0, "fs__write_file", "lines=1-2")), (kept, Flow(1.0, "mail__send", ""))])
    either.record_flows([(gone, Flow(3.0, "fs__write_file", ""))])  # deleted meanwhile: nothing to show it on
    assert either.flows([kept, gone]) == {kept: [Flow(1.0, "mail__send", ""), Flow(2.0, "fs__write_file", "lines=1-2")]}


def test_stats_sum_each_tools_counts_over_a_window(either: TaskMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_800_000_000.0]
    monkeypatch.setattr(task_memory.time, "time", lambda: clock[0])
    for size in (1000, 3000):
        either.usage.stored("fs", "read_file", size, size // 4, 80)
    clock[0] += 3600
    either.usage.read("memory_load", 600)
    either.usage.flush()
    monkeypatch.undo()
    rows = {(r.server, r.tool, r.kind): (r.count, r.bytes, r.tokens, r.model_tokens) for r in either.catalog.usage()}
    assert rows[("fs", "read_file", "stored")] == (2, 4000, 1000, 160)
    since = either.catalog.usage(since=clock[0] - 60)
    assert [(r.tool, r.kind, r.model_tokens) for r in since] == [("memory_load", "read", 600)]


def test_a_listing_of_many_outputs_gives_each_its_own_items_in_order(either: TaskMemory) -> None:
    """memory_list reads every listed output's items at once: past 500 outputs too, each keeps its own, in order."""
    made = []
    for n in range(503):
        items = [TextArtifact(value=f"output {n} part {k}") for k in range(1 + n % 3)]
        made.append(either.store(items, tool="fs.read", arguments={"n": n}).namespace)
    listed = either.catalog.newest(whole_arguments=False)
    assert [r.namespace for r in listed] == made[::-1]  # newest first
    for record in listed:
        n = record.arguments["n"]
        assert [i.item for i in record.items] == list(range(1 + n % 3))
        assert [either.payload(record.namespace, i.item) for i in record.items] == [
            f"output {n} part {k}".encode() for k in range(1 + n % 3)
        ]
    assert [r.namespace for r in either.recent(2)] == made[:-3:-1]
