"""Reading by line and by outline: memory_load(line=N) starts exactly at line N and reading on by next_line
gives back the text byte for byte; memory_outline pages the whole outline; memory_query hits name their line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.memory.task_memory import TaskMemory

from .support import DOCS, meta, text_of

pytestmark = pytest.mark.anyio

SOURCE = DOCS / "code_subprocess.py"


async def load(client: Client, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool("memory_load", arguments)
    assert not result.is_error, text_of(result)
    return text_of(result), meta(result)


async def test_load_at_a_line_starts_exactly_at_that_line(memory: TaskMemory, client: Client) -> None:
    text = SOURCE.read_text()
    lines = text.split("\n")
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    for n in (1, 2, lines.index("class TimeoutExpired(SubprocessError):") + 1, len(lines) - 1):
        window, facts = await load(client, artifact_namespace=ref.namespace, line=n, max_tokens=60)
        assert window.startswith(lines[n - 1]), n
        assert facts["line"] == n
        assert window.endswith("\n") or facts["next_line"] is None  # ends at a line break where one is in reach
        if facts["next_line"] is not None:
            assert window == "".join(line + "\n" for line in lines[n - 1 : facts["next_line"] - 1])
            assert facts["end_line"] == facts["next_line"] - 1


async def test_reading_on_by_next_line_gives_back_the_text_byte_for_byte(memory: TaskMemory, client: Client) -> None:
    # Pretty lines, then one line longer than a window (as minified JSON is): the reader goes on by offset there.
    text = SOURCE.read_text()[:20_000] + json.dumps({"k": list(range(3000))}) + "\nlast line\n"
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    parts: list[str] = []
    at: dict[str, int] = {"line": 1}
    while at:
        window, facts = await load(client, artifact_namespace=ref.namespace, max_tokens=500, **at)
        parts.append(window)
        if facts["next_line"] is not None:
            at = {"line": facts["next_line"]}
        elif facts["next_offset"] is not None:
            at = {"offset": facts["next_offset"]}
        else:
            at = {}
    assert "".join(parts) == text


async def test_after_a_line_read_next_offset_is_where_the_window_was_cut(memory: TaskMemory, client: Client) -> None:
    """A line read is cut back to the last line break it reaches: reading on from its next_offset (as a client
    that only knows offsets does) gives the text that follows, nothing skipped and nothing twice."""
    text = SOURCE.read_text()[:30_000]
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    for line in (1, 40, 200):
        window, facts = await load(client, artifact_namespace=ref.namespace, line=line, max_tokens=300)
        assert facts["next_offset"] is not None
        after, _ = await load(client, artifact_namespace=ref.namespace, offset=facts["next_offset"], max_tokens=300)
        start = text.index(window)
        assert text[start:].startswith(window + after), line


async def test_offset_windows_say_which_lines_they_cover(memory: TaskMemory, client: Client) -> None:
    text = SOURCE.read_text()
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    window, facts = await load(client, artifact_namespace=ref.namespace, offset=1000, max_tokens=200)
    start = text.encode().index(window.encode())
    assert facts["line"] == text[:start].count("\n") + 1
    assert facts["end_line"] == text[: start + len(window) - 1].count("\n") + 1


async def test_line_and_offset_together_or_a_line_past_the_end_are_refused(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([TextArtifact(value="one\ntwo\n")], tool="t")
    both = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace, "line": 2, "offset": 1})
    past = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace, "line": 3})
    assert both.is_error
    assert "not both" in text_of(both)
    assert past.is_error
    assert "lines 1 to 2" in text_of(past)


async def test_paging_memory_outline_gives_back_the_whole_outline(memory: TaskMemory, client: Client) -> None:
    text = (DOCS / "json_botocore_sqs_service-2.json").read_text()
    ref = memory.store([JsonArtifact(value=json.loads(text), text=text)], tool="aws.describe", outline_tokens=400)
    whole = ref.meta()["outline"]
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    calls = 0
    while offset is not None:
        result = await client.call_tool(
            "memory_outline", {"artifact_namespace": ref.namespace, "offset": offset, "max_tokens": 300}
        )
        assert not result.is_error, text_of(result)
        facts = meta(result)
        assert set(facts) == {"outline", "next_offset"}
        assert len(text_of(result).split("\n")) == len(facts["outline"]) + 1  # one line per entry, then where
        pages.extend(facts["outline"])
        offset = facts["next_offset"]
        calls += 1
    assert calls > 2
    assert pages == whole == [e.to_dict() for e in memory.outline(ref.namespace)]


async def test_memory_outline_of_an_image_says_it_has_none(memory: TaskMemory, client: Client) -> None:
    from offprompt.artifacts import ImageArtifact

    ref = memory.store([ImageArtifact(value=b"\x89PNG fake")], tool="t")
    result = await client.call_tool("memory_outline", {"artifact_namespace": ref.namespace})
    assert result.is_error
    assert "not text" in text_of(result)


async def test_query_hits_name_the_line_they_start_in(memory: TaskMemory, client: Client) -> None:
    text = SOURCE.read_text()
    lines = text.split("\n")
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    result = await client.call_tool(
        "memory_query", {"query": "TimeoutExpired", "artifact_namespace": ref.namespace, "mode": "lexical"}
    )
    hits = meta(result)["results"]
    assert hits
    for hit in hits:
        assert hit["text"].split("\n")[0] in lines[hit["line"] - 1]
        assert f"line {hit['line']} " in text_of(result)


async def test_the_memory_tools_cost_at_most_1600_tokens_of_tools_list(client: Client) -> None:
    from offprompt.tokens import count_tokens

    listed = (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert {t["name"] for t in listed["tools"]} >= {"memory_load", "memory_outline", "memory_query"}
    assert count_tokens(json.dumps(listed)) <= 1600
