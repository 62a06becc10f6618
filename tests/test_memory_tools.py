"""The memory tools end to end through an in-process MCP client, on a real memory."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client

from offprompt.artifacts import ImageArtifact, JsonArtifact, TextArtifact, from_result
from offprompt.memory.catalog import Flow
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

from .support import DOCS, meta, text_of

pytestmark = pytest.mark.anyio


def one_megabyte_of_text() -> str:
    rng = random.Random(7)
    words = ["alpha", "beta", "Grüße", "日本", "emoji🎉", "x" * 40, "\t", "\r\n", "naïve", "{json}"]
    parts: list[str] = []
    size = 0
    while size < 1_000_000:
        part = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        parts.append(part)
        size += len(part.encode())
    return "".join(parts)


async def read_back(client: Client, namespace: str, item: int = 0, window: int = 2000) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = await client.call_tool(
            "memory_load", {"artifact_namespace": namespace, "item": item, "offset": offset, "max_tokens": window}
        )
        assert not result.is_error, text_of(result)
        parts.append(text_of(result))
        offset = meta(result)["next_offset"]
    return "".join(parts)


async def test_a_megabyte_of_text_reads_back_byte_for_byte(memory: TaskMemory, client: Client) -> None:
    text = one_megabyte_of_text()
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file", arguments={"path": "/big.txt"})
    assert await read_back(client, ref.namespace, window=3000) == text


async def test_load_answers_with_the_window_and_where_it_sits(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([TextArtifact(value="word " * 5000)], tool="t")
    result = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace, "max_tokens": 100})
    assert result.structured_content is None
    assert meta(result) == {
        "artifact_namespace": ref.namespace,
        "item": 0,
        "items": 1,
        "kind": "text",
        "offset": 0,
        "next_offset": 100,
        "total_tokens": count_tokens("word " * 5000),
        "line": 1,  # one long line: the window ends inside it
        "end_line": 1,
        "next_line": None,
    }
    assert "offset=100" in text_of(result, 1)


async def test_reference_names_memory_namespace_and_links_to_it(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([TextArtifact(value="secret " * 100)], tool="vault.get", arguments={"key": "k"})
    result = ref.to_result()
    first = text_of(result)
    assert first.startswith(
        f'Output of "vault.get" was stored in memory with memory_name "test" and artifact_namespace "{ref.namespace}".'
    )
    assert "secret" not in first
    assert result.structured_content is None
    links = [b for b in result.content if isinstance(b, mt.ResourceLink)]
    assert [str(link.uri) for link in links] == [f"memory://test/{ref.namespace}"]
    read = await client.read_resource(f"memory://test/{ref.namespace}")
    assert isinstance(read.contents[0], mt.TextResourceContents)
    assert read.contents[0].text == "secret " * 100
    assert meta(result) == {
        "memory_name": "test",
        "artifact_namespace": ref.namespace,
        "tool": "vault.get",
        "kinds": ["text"],
        "tokens": count_tokens("secret " * 100),
        "bytes": 700,
        "pass_as": f"⟦memory:{ref.namespace}/0⟧",
    }


async def test_text_and_image_share_one_namespace(memory: TaskMemory, client: Client) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    ref = memory.store(
        [TextArtifact(value="a chart of sales"), ImageArtifact(value=png, mime_type="image/png")], tool="charts.draw"
    )
    result = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace, "item": 1})
    image = result.content[0]
    assert isinstance(image, mt.ImageContent)
    assert base64.b64decode(image.data) == png
    assert meta(result)["mime_type"] == "image/png"
    assert meta(result)["bytes"] == len(png)
    assert await read_back(client, ref.namespace, item=0) == "a chart of sales"


async def test_query_ranks_the_answering_section_at_the_top(memory: TaskMemory, client: Client) -> None:
    doc = (DOCS / "prose_flask_config.rst").read_text()
    ref = memory.store([TextArtifact(value=doc)], tool="docs.fetch", arguments={"page": "flask config"})
    assert memory.text.wait_indexed(timeout=300)  # type: ignore[attr-defined]
    result = await client.call_tool(
        "memory_query", {"query": "How long does a permanent session last by default?", "top_k": 3}
    )
    found = meta(result)
    assert found["indexing"] == []
    # First or second: the neighbouring SESSION_REFRESH_EACH_REQUEST shares every word of this question and is
    # nearly tied (the retrieval eval, not one question, sets the ranking's weights).
    best = next(r for r in found["results"][:2] if "timedelta(days=31)" in r["text"])
    assert best["artifact_namespace"] == ref.namespace
    # The hit's offset leads memory_load straight to the passage.
    window = await client.call_tool(
        "memory_load", {"artifact_namespace": ref.namespace, "offset": best["offset"], "max_tokens": 400}
    )
    assert "timedelta(days=31)" in text_of(window)


async def test_query_says_which_namespaces_are_still_indexing(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([TextArtifact(value="a log line about disk pressure\n" * 20000)], tool="logs.tail")
    result = await client.call_tool("memory_query", {"query": "disk", "artifact_namespace": ref.namespace})
    assert not result.is_error
    assert meta(result)["indexing"] == [ref.namespace]
    assert "Still indexing" in text_of(result)


async def test_grep_finds_lines_with_numbers_and_offsets(memory: TaskMemory, client: Client) -> None:
    lines = [f"2026-11-30 INFO request {i} ok" for i in range(3000)]
    lines[1234] = "2026-11-30 ERROR ERR_CONN_RESET upstream closed"
    ref = memory.store([TextArtifact(value="\n".join(lines))], tool="logs.tail")
    result = await client.call_tool("memory_grep", {"pattern": r"ERR_\w+"})
    [match] = meta(result)["matches"]
    assert match["line"] == 1235
    assert match["text"] == lines[1234]
    window = await client.call_tool(
        "memory_load", {"artifact_namespace": ref.namespace, "offset": match["offset"], "max_tokens": 5}
    )
    assert "ERR_CONN_RESET" in text_of(window)
    capped = await client.call_tool("memory_grep", {"pattern": "INFO", "max_matches": 10})
    assert meta(capped)["truncated"] is True
    assert len(meta(capped)["matches"]) == 10


async def test_list_and_delete(memory: TaskMemory, client: Client) -> None:
    first = memory.store([TextArtifact(value="one")], tool="a.first", arguments={"n": 1})
    second = memory.store([JsonArtifact(value={"k": [1, 2]})], tool="b.second")
    listed = meta(await client.call_tool("memory_list", {}))["namespaces"]
    assert [n["artifact_namespace"] for n in listed] == [second.namespace, first.namespace]
    assert listed[1]["tool"] == "a.first"
    assert listed[1]["arguments"] == {"n": 1}
    assert listed[0]["kinds"] == ["json"]
    assert listed[0]["expires"] > listed[0]["created"]
    deleted = await client.call_tool("memory_delete", {"artifact_namespace": first.namespace})
    assert meta(deleted)["deleted"]["artifact_namespace"] == first.namespace
    gone = await client.call_tool("memory_load", {"artifact_namespace": first.namespace})
    assert gone.is_error
    assert "memory_list" in text_of(gone)


async def test_a_listing_asked_again_shows_every_change_since_and_drops_what_expired(tmp_path: Path) -> None:
    """memory_list answers a repeated listing from what it read last only while nothing it read has changed: an
    output stored, passed on or deleted, records made, or an output past its TTL (no write at all) show at once."""
    memory = TaskMemory.open(MemorySettings(name="relist", data_dir=tmp_path, ttl_seconds=3600))
    try:
        async with Client(build_server(memory)) as client:

            async def listed() -> list[dict[str, Any]]:
                return list(meta(await client.call_tool("memory_list", {"limit": 5}))["namespaces"])

            first = memory.store([TextArtifact(value="one")], tool="a.first").namespace
            assert [n["artifact_namespace"] for n in await listed()] == [first]
            second = memory.store([TextArtifact(value="two")], tool="a.second").namespace
            assert [n["artifact_namespace"] for n in await listed()] == [second, first]
            memory.record_flows([(first, Flow(1.0, "fs__write_file", "whole"))])
            assert [f["tool"] for f in (await listed())[1]["passed_to"]] == ["fs__write_file"]
            memory.delete(second)
            assert [n["artifact_namespace"] for n in await listed()] == [first]
            memory.ttl_seconds = 0.5
            short = memory.store([TextArtifact(value="three")], tool="a.third").namespace
            assert [n["artifact_namespace"] for n in await listed()] == [short, first]
            await anyio.sleep(0.6)  # nothing written since: the listing still drops what expired
            assert [n["artifact_namespace"] for n in await listed()] == [first]
    finally:
        memory.close()


async def test_stats_count_every_answer_read_back_the_same_again_and_changed(
    memory: TaskMemory, client: Client
) -> None:
    """`offprompt stats` counts the tokens of each memory tool answer: an answer asked for again counts again,
    an answer that changed counts as it is now, and a long one (past the kept counts' size) counts whole."""
    memory.store([TextArtifact(value="one")], tool="a.first", arguments={"n": 1})
    first = text_of(await client.call_tool("memory_list", {}))
    assert text_of(await client.call_tool("memory_list", {})) == first
    memory.store([TextArtifact(value="two")], tool="a.second", arguments={"q": "x" * 40})
    changed = text_of(await client.call_tool("memory_list", {}))
    long = memory.store([TextArtifact(value="word " * 20_000)], tool="a.third").namespace
    window = await client.call_tool("memory_load", {"artifact_namespace": long, "max_tokens": 8_000})
    read_back = "\n".join(block.text for block in window.content if isinstance(block, mt.TextContent))
    assert len(read_back) > 16_384
    memory.usage.flush()
    read = {(r.tool, r.count): r.model_tokens for r in memory.catalog.usage() if r.kind == "read"}
    assert read == {
        ("memory_list", 3): 2 * count_tokens(first) + count_tokens(changed),
        ("memory_load", 1): count_tokens(read_back),
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("memory_load", {"artifact_namespace": "nosuchspace"}, "call memory_list"),
        ("memory_load", {"artifact_namespace": "NS", "offset": 10_000}, "past the end"),
        ("memory_load", {"artifact_namespace": "NS", "line": 10_000}, "has lines 1 to 1"),
        ("memory_load", {"artifact_namespace": "NS", "item": 5}, "holds items 0 to 0"),
        ("memory_load", {"artifact_namespace": "NS", "memory_name": "other"}, 'holds memory "test"'),
        ("memory_grep", {"pattern": "(unclosed"}, "invalid regular expression"),
        ("memory_query", {"query": "x", "top_k": 0}, "top_k"),
        ("memory_query", {"query": "x", "artifact_namespace": "nosuchspace"}, "call memory_list"),
        ("memory_list", {"limit": -1}, "limit"),
        ("memory_delete", {}, "artifact_namespace"),
    ],
)
async def test_bad_input_is_an_error_that_says_what_to_do(
    memory: TaskMemory, client: Client, tool: str, arguments: dict[str, Any], says: str
) -> None:
    ref = memory.store([TextArtifact(value="keep me " * 100)], tool="t")
    arguments = {k: ref.namespace if v == "NS" else v for k, v in arguments.items()}
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert says in text_of(result)
    assert await read_back(client, ref.namespace) == "keep me " * 100  # nothing lost


async def test_structured_content_that_repeats_the_text_is_kept_but_searched_once(
    memory: TaskMemory, client: Client
) -> None:
    body = "".join(f"line {i}: ERR_DISK_FULL on volume {i}\n" for i in range(300))
    result = mt.CallToolResult(content=[mt.TextContent(text=body)], structured_content={"result": body})
    ref = memory.store(from_result(result), tool="logs.read")
    assert ref.record.kinds == ["text", "json"]
    assert await read_back(client, ref.namespace, item=1) == json.dumps({"result": body}, ensure_ascii=False)
    grep = await client.call_tool("memory_grep", {"pattern": "volume 7$", "artifact_namespace": ref.namespace})
    assert [(m["item"], m["line"]) for m in meta(grep)["matches"]] == [(0, 8)]


async def test_a_big_image_loads_back_whole_where_nothing_caps_an_answer(memory: TaskMemory, client: Client) -> None:
    """Not over HTTP (this client is in process, as a stdio one): a 1 MB screenshot comes back as the server sent
    it, through memory_load and as a resource."""
    picture = b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(1_000_000)
    ref = memory.store([ImageArtifact(value=picture, mime_type="image/png")], tool="shots.take")
    loaded = await client.call_tool("memory_load", {"artifact_namespace": ref.namespace})
    assert not loaded.is_error
    image = loaded.content[0]
    assert isinstance(image, mt.ImageContent)
    assert base64.b64decode(image.data) == picture
    assert image.mime_type == "image/png"
    read = await client.read_resource(f"memory://{memory.name}/{ref.namespace}/0")
    blob = read.contents[0]
    assert isinstance(blob, mt.BlobResourceContents)
    assert base64.b64decode(blob.blob) == picture


async def test_rare_four_byte_characters_read_back_one_token_at_a_time(memory: TaskMemory, client: Client) -> None:
    text = "Linear B 𐀀𐀁𐀂, italics \U0001d440\U0001d441\U0001d442, CJK Ext. B 𠀀𠀁, cuneiform 𒀀𒀁, 👋🏽\r\n" * 3
    ref = memory.store([TextArtifact(value=text)], tool="fs.read_file")
    assert await read_back(client, ref.namespace, window=1) == text


async def test_a_grep_hit_in_non_ascii_text_loads_a_window_that_starts_at_the_match(
    memory: TaskMemory, client: Client
) -> None:
    # Multi-byte characters on the lines before and before the match on its line: offsets are in bytes.
    lines = [f"Grüße {i}: 日本語のログ 🎉 наблюдение ok" for i in range(400)]
    lines[321] = "Grüße 321: 日本語のログ 🎉 ERR_CONN_RESET upstream closed"
    ref = memory.store([TextArtifact(value="\n".join(lines))], tool="logs.tail")
    [match] = meta(await client.call_tool("memory_grep", {"pattern": "ERR_CONN_RESET"}))["matches"]
    window = await client.call_tool(
        "memory_load", {"artifact_namespace": ref.namespace, "offset": match["offset"], "max_tokens": 5}
    )
    before, found, _ = text_of(window).partition("ERR_CONN_RESET")
    assert found
    assert len(before) <= 1  # at most the space the match's first token starts with
