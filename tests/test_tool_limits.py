"""Bad or huge tool arguments get a clear isError saying what to send, and one answer stays small."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import TaskMemory

from .support import meta, text_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("bad", ["10", True, 10.0])
async def test_numbers_are_not_guessed_from_strings_or_flags(memory: TaskMemory, client: Client, bad: object) -> None:
    ref = memory.store([TextArtifact(value="word " * 100)], tool="t")
    result = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace, "offset": bad})
    assert result.is_error
    assert "offset: Input should be a valid integer" in text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_query", {"query": "lone \ud800 surrogate"}, "query"),
        ("memory_grep", {"pattern": "\udfff"}, "pattern"),
        ("memory_load", {"artifact_namespace": "ns\ud800"}, "artifact_namespace"),
    ],
)
async def test_a_lone_surrogate_is_refused_clearly(
    memory: TaskMemory, client: Client, tool: str, arguments: dict[str, str], field: str
) -> None:
    memory.store([TextArtifact(value="some text")], tool="t")
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert f"{field} holds a lone surrogate" in text_of(result)
    assert "unexpectedly" not in text_of(result)


@pytest.mark.parametrize("tool", ["memory_query", "memory_grep"])
async def test_an_empty_namespace_says_to_omit_it_to_search_all(client: Client, tool: str) -> None:
    arguments = {"query": "x"} if tool == "memory_query" else {"pattern": "x"}
    result = await client.call_tool(tool, {**arguments, "artifact_namespace": ""})
    assert result.is_error
    assert "omit artifact_namespace to search all" in text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("memory_query", {"query": "a" * 40_000}, "query is 40,000 characters long; the limit is 4,000"),
        ("memory_grep", {"pattern": "a" * 5_000}, "pattern is 5,000 characters long; the limit is 1,000"),
        ("memory_load", {"artifact_namespace": "n" * 1_000}, "artifact_namespace is 1,000 characters long"),
    ],
)
async def test_oversized_arguments_are_refused_with_the_limit(
    client: Client, tool: str, arguments: dict[str, str], said: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert said in text_of(result)
    assert len(text_of(result)) < 500  # the argument is not quoted back


async def test_memory_list_stays_small_whatever_the_stored_arguments(memory: TaskMemory, client: Client) -> None:
    huge = {"content": "x" * 1_000_000, "nested": {"rows": list(range(100_000))}}
    many = {f"arg{i}": i for i in range(1_000)}
    for arguments in (huge, many, huge, many, huge):
        memory.store([TextArtifact(value="stored")], tool="fs.write", arguments=arguments)
    result = await client.call_tool("memory_list", {"limit": 5})
    assert not result.is_error
    assert len(result.model_dump_json()) < 40_000  # was 26 MB for a real memory
    rows = meta(result)["namespaces"]
    assert len(rows) == 5
    shown = rows[0]["arguments"]
    assert shown["content"].endswith("… [cut: 1,000,000 characters]")
    assert shown["nested"].startswith('{"rows": [0, 1, 2')
    assert rows[1]["arguments"]["…"] == "[980 more arguments not shown]"
    assert rows[1]["arguments"]["arg0"] == 0  # short values stay as they were
    json.dumps(rows)  # still plain JSON for programs


async def test_a_listing_reads_the_shown_arguments_and_a_delete_still_reports_them_whole(
    memory: TaskMemory, client: Client
) -> None:
    # memory_list shows 300 characters of each value: it must not read (and parse) a megabyte per row to do so.
    huge = {"content": "x" * 1_000_000, "path": "/tmp/out.txt"}
    ref = memory.store([TextArtifact(value="stored")], tool="fs.write", arguments=huge)
    [listed] = memory.recent(1)
    assert listed.arguments_cut
    assert len(json.dumps(listed.arguments)) < 1_000
    assert listed.arguments["path"] == "/tmp/out.txt"
    assert memory.get(ref.namespace).arguments == huge  # `memory show` and export have the call whole
    deleted = meta(await client.call_tool("memory_delete", {"artifact_namespace": ref.namespace}))["deleted"]
    assert deleted["arguments"]["content"].endswith("… [cut: 1,000,000 characters]")


async def test_memory_list_counts_and_cuts_non_ascii_arguments_as_characters(
    memory: TaskMemory, client: Client
) -> None:
    # 250 characters as JSON; 1,240 if escaped as \u00e9: a list of accented names must not be cut as if long.
    names = {"names": ["é" * 40] * 5, "long": ["é" * 400]}
    memory.store([TextArtifact(value="stored")], tool="crm.lookup", arguments=names)
    shown = meta(await client.call_tool("memory_list", {"limit": 1}))["namespaces"][0]["arguments"]
    assert shown["names"] == names["names"]
    assert shown["long"].startswith('["éééé')
    assert shown["long"].endswith("… [cut: 404 characters]")
