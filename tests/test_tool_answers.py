"""What each memory tool's answer says, word for word where the model reads it, and in `_meta` where a client
script does."""

from __future__ import annotations

import mcp_types as mt
import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact, from_block
from offprompt.memory.task_memory import TaskMemory

from .support import meta, text_of

pytestmark = pytest.mark.anyio


async def test_an_empty_memory_has_no_passages_without_a_yet(client: Client) -> None:
    found = await client.call_tool("memory_query", {"query": "anything at all", "mode": "lexical"})
    assert text_of(found) == "No passages found."  # "yet" would send the model back to wait for nothing


async def test_grep_delete_and_list_name_the_namespace_and_the_memory(memory: TaskMemory, client: Client) -> None:
    ns = memory.store([TextArtifact(value="alpha\nbeta\n")], tool="notes.read").namespace
    grep = meta(await client.call_tool("memory_grep", {"pattern": "beta"}))
    assert grep["matches"] == [{"artifact_namespace": ns, "item": 0, "line": 2, "offset": 2, "text": "beta"}]
    listed = meta(await client.call_tool("memory_list", {}))
    assert [(r["artifact_namespace"], r["memory_name"]) for r in listed["namespaces"]] == [(ns, memory.name)]
    deleted = await client.call_tool("memory_delete", {"artifact_namespace": ns})
    assert meta(deleted)["deleted"]["memory_name"] == memory.name
    assert text_of(deleted).startswith(f"Deleted artifact_namespace {ns} (output of notes.read: 1 item, ")


async def test_a_selection_says_how_many_outputs_and_where_it_ends(memory: TaskMemory, client: Client) -> None:
    ns = memory.store([from_block(mt.TextContent(text='[{"a": 1}, {"a": 2}]'))], tool="api.list").namespace
    one = await client.call_tool("memory_select", {"artifact_namespace": ns, "expression": "length"})
    assert text_of(one, 1) == "Characters 0-1 of 1 (1 output, one per line). This is the end."
    none = await client.call_tool("memory_select", {"artifact_namespace": ns, "expression": "empty"})
    assert text_of(none, 1) == "The expression produced no output."
