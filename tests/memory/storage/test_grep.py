"""memory_grep runs where it can be stopped: a runaway pattern costs one call, not the server."""

from __future__ import annotations

import tracemalloc

import anyio
import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact
from offprompt.errors import LimitExceededError
from offprompt.memory.storage import grep
from offprompt.memory.task_memory import TaskMemory

from ...support import meta, text_of

pytestmark = pytest.mark.anyio

RUNAWAY = "(a+)+$"  # backtracks 2**34 times on the line below


async def test_a_runaway_pattern_stops_at_the_limit_while_other_calls_are_answered(
    memory: TaskMemory, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep, "GREP_SECONDS", 3.0)
    ref = memory.store([TextArtifact(value="a" * 34 + "b\nplain line\n")], tool="t")
    answered: list[str] = []
    with anyio.fail_after(60):  # a hang guard: on main this call never returns
        async with anyio.create_task_group() as tg:

            async def runaway() -> None:
                result = await client.call_tool("memory_grep", {"pattern": RUNAWAY})
                answered.append("grep")
                assert result.is_error
                assert "time limit of 3 s" in text_of(result)
                assert "Simplify the pattern" in text_of(result)

            tg.start_soon(runaway)
            await anyio.sleep(0.5)  # the grep is running now
            listed = await client.call_tool("memory_list", {})
            loaded = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace})
            answered.append("others")
            assert meta(listed)["namespaces"][0]["artifact_namespace"] == ref.namespace
            assert text_of(loaded).startswith("a" * 34)
    assert answered == ["others", "grep"]
    # The killed worker is replaced: the next grep answers.
    again = await client.call_tool("memory_grep", {"pattern": "plain"})
    assert [m["line"] for m in meta(again)["matches"]] == [2]


async def test_grep_keeps_python_regex_semantics(memory: TaskMemory, client: Client) -> None:
    text = "aa bb\nfoobar\nfoobaz\nGrüße aus Köln\n\nlast"
    ref = memory.store([TextArtifact(value=text)], tool="t")

    async def lines(pattern: str) -> list[int]:
        result = await client.call_tool("memory_grep", {"pattern": pattern, "artifact_namespace": ref.namespace})
        assert not result.is_error, text_of(result)
        return [m["line"] for m in meta(result)["matches"]]

    assert await lines(r"(\w)\1 (\w)\2") == [1]  # backreferences
    assert await lines(r"foo(?=bar)") == [2]  # lookahead
    assert await lines(r"(?<!foo)ba[rz]") == []  # lookbehind
    assert await lines(r"^\w+e aus") == [4]  # \w is Unicode, as in Python
    assert await lines(r"^$") == [5]
    bad = await client.call_tool("memory_grep", {"pattern": "(unclosed"})
    assert bad.is_error
    assert "invalid regular expression" in text_of(bad)


async def test_grep_streams_the_text_instead_of_reading_it_whole(memory: TaskMemory) -> None:
    line = "ordinary log line with some words in it, nothing to see here\n"
    text = line * (10_000_000 // len(line)) + "needle\n"
    # Not indexed: no background thread allocates while we measure the search.
    memory.text.store("big", 0, TextArtifact(value=text), searchable=False)
    del text
    tracemalloc.start()
    try:
        matches, truncated = await anyio.to_thread.run_sync(memory.text.grep, "needle", [("big", 0)], 5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [m.text for m in matches] == ["needle"]
    assert not truncated
    # Reading 10 MB whole and splitting it into lines took over 50 MB here; the worker streams it.
    assert peak < 5_000_000, f"grep held {peak:,} bytes in the server"


async def test_a_line_too_long_to_hold_stops_at_the_memory_limit_and_says_so(
    memory: TaskMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A text with no newline is held whole by the worker; without a cap it took as much memory as it was long.
    monkeypatch.setattr(grep, "GREP_MEMORY_BYTES", 48 * 1024**2)
    memory.text.store("flat", 0, TextArtifact(value="word " * 5_000_000 + "needle"), searchable=False)  # 25 MB
    memory.text.store("lines", 0, TextArtifact(value="a line\nthe needle\n"), searchable=False)
    with pytest.raises(LimitExceededError) as caught:
        await anyio.to_thread.run_sync(memory.text.grep, "needle", [("flat", 0)], 5)
    assert "memory limit of 48 MiB" in str(caught.value)
    assert "memory_load offset=" in str(caught.value)
    # The worker answers the next search.
    matches, _ = await anyio.to_thread.run_sync(memory.text.grep, "needle", [("lines", 0)], 5)
    assert [m.line for m in matches] == [2]
