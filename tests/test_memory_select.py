"""memory_select end to end: jq over real JSON nobody here wrote, equal to what the jq library gives on the original."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import jq
import mcp_types as mt
import pytest
from mcp import Client

from offprompt.artifacts import ImageArtifact, JsonArtifact, TextArtifact, from_block, from_result
from offprompt.config import parse_config
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.select import SelectLimits, Selector, page
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens
from offprompt.tool_args import SelectArgs
from offprompt.tools import TOOLS, memory_select

from .support import REPO, meta, node_peer, text_of

pytestmark = pytest.mark.anyio

LOCK = REPO / "tests" / "peers" / "package-lock.json"
PACKAGE = REPO / "tests" / "peers" / "package.json"


def jq_all(expression: str, value: Any) -> list[Any]:
    """What the jq library itself gives on the original value."""
    return list(jq.compile(expression).input_value(value).all())


async def select(client: Client, namespace: str, expression: str, **more: Any) -> mt.CallToolResult:
    return await client.call_tool("memory_select", {"artifact_namespace": namespace, "expression": expression, **more})


async def select_all(client: Client, namespace: str, expression: str, max_tokens: int, **more: Any) -> str:
    """The whole result, page by page from offset 0 along next_offset."""
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = await select(client, namespace, expression, offset=offset, max_tokens=max_tokens, **more)
        assert not result.is_error, text_of(result)
        assert count_tokens(text_of(result)) <= max_tokens
        parts.append(text_of(result))
        offset = meta(result)["next_offset"]
    return "".join(parts)


def outputs(text: str) -> list[Any]:
    return [json.loads(line) for line in text.split("\n")] if text else []


def store_json_text(memory: TaskMemory, text: str, tool: str, owner: str = "") -> str:
    artifact = from_block(mt.TextContent(text=text))
    assert isinstance(artifact, JsonArtifact)
    return memory.store([artifact], tool=tool, owner=owner).namespace


def ndjson_log(records: int) -> str:
    """A JSON Lines log written by the standard library's logging, one JSON object per record."""

    class JsonLines(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            fields = ("name", "levelname", "module", "funcName", "lineno", "process", "thread")
            return json.dumps({"message": record.getMessage(), **{f: getattr(record, f) for f in fields}})

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("offprompt.test.ndjson")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        for i in range(records):
            level = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)[(i * 7) % 4 if i % 5 else 3]
            logger.log(level, "job %d finished in %d ms on worker-%d", i, (i * 37) % 1000, i % 8)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


async def test_package_lock_selections_equal_jq_on_the_original(memory: TaskMemory, client: Client) -> None:
    text = LOCK.read_text()
    original = json.loads(text)
    namespace = store_json_text(memory, text, "fs.read_text_file")
    for expression in (
        ".packages | length",
        "[.packages | to_entries[] | select(.value.dev == true) | .key] | sort",
        '.packages | to_entries | map(select(.value.license == "MIT")) | length',
        '[.packages[] | .license // "none"] | group_by(.) | map({(.[0]): length}) | add',
        '.packages | to_entries[] | select(.key | startswith("node_modules/@modelcontextprotocol/"))'
        " | {(.key): .value.version}",
    ):
        result = await select(client, namespace, expression)
        assert not result.is_error, text_of(result)
        assert meta(result)["next_offset"] is None
        assert outputs(text_of(result)) == jq_all(expression, original), expression
        assert meta(result)["outputs"] == len(jq_all(expression, original))


async def test_a_long_result_pages_and_reassembles_exactly(memory: TaskMemory, client: Client) -> None:
    text = LOCK.read_text()
    namespace = store_json_text(memory, text, "fs.read_text_file")
    expression = ".packages | to_entries | map({name: .key, version: .value.version, license: .value.license})"
    first = await select(client, namespace, expression, max_tokens=300)
    assert meta(first)["next_offset"] is not None
    assert f"offset={meta(first)['next_offset']}" in text_of(first, 1)
    whole = await select_all(client, namespace, expression, max_tokens=300)
    assert len(whole) == meta(first)["total_chars"]
    assert outputs(whole) == jq_all(expression, json.loads(text))
    # Several outputs come one per line, and their pages join back just the same.
    many = ".packages | to_entries[] | select(.value.dev) | .key"
    assert outputs(await select_all(client, namespace, many, max_tokens=50)) == jq_all(many, json.loads(text))


async def test_json_lines_from_logging_are_one_array_of_records(memory: TaskMemory, client: Client) -> None:
    log = ndjson_log(2000)
    records = [json.loads(line) for line in log.splitlines()]
    namespace = memory.store([TextArtifact(value=log)], tool="logs.tail").namespace
    count = await select(client, namespace, "length")
    assert text_of(count) == "2000"
    for expression in (
        'map(select(.levelname == "ERROR")) | length',
        "group_by(.levelname) | map({level: .[0].levelname, n: length})",
        '[.[] | select(.message | test("worker-3$")) | .message][:5]',
    ):
        result = await select(client, namespace, expression)
        assert outputs(text_of(result)) == jq_all(expression, records), expression


@asynccontextmanager
async def through_offprompt(memory: TaskMemory, config: Any) -> AsyncIterator[Client]:
    proxy = Proxy(config.servers, default_timeout=config.settings.call_timeout_seconds)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        yield client


@pytest.mark.node
async def test_directory_tree_of_a_real_package_through_the_proxy(memory: TaskMemory) -> None:
    root = REPO / "tests" / "peers" / "node_modules" / "@modelcontextprotocol" / "sdk"
    config = parse_config(
        {"mcpServers": {"fs": node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(root.resolve()))}}
    )
    async with through_offprompt(memory, config) as client:
        reference = await client.call_tool("fs__directory_tree", {"path": str(root.resolve())})
        namespace = meta(reference)["artifact_namespace"]
        original_text = ""
        offset: int | None = 0
        while offset is not None:
            window = await client.call_tool(
                "memory_load", {"artifact_namespace": namespace, "offset": offset, "max_tokens": 20000}
            )
            original_text += text_of(window)
            offset = meta(window)["next_offset"]
        original = json.loads(original_text)
        for expression in (
            "length",
            '[.. | objects | select(.type == "file")] | length',
            '[.. | objects | select(.type == "file") | .name | select(endswith(".d.ts"))] | length',
            '[.. | objects | select(.type == "directory") | {name, entries: (.children | length)}] '
            "| sort_by(-.entries) | .[:10]",
        ):
            result = await select(client, namespace, expression)
            assert not result.is_error, text_of(result)
            assert outputs(text_of(result)) == jq_all(expression, original), expression


async def test_two_results_join_through_their_variables(memory: TaskMemory, client: Client) -> None:
    lock_text, package_text = LOCK.read_text(), PACKAGE.read_text()
    lock = store_json_text(memory, lock_text, "fs.read_text_file")
    package = store_json_text(memory, package_text, "fs.read_text_file")
    expression = (
        '[$ns_{p}.dependencies | keys[] as $d | {{name: $d, locked: $lock.packages["node_modules/" + $d].version}}]'
    )
    by_name = f". as $lock | {expression.format(p=package)}"
    by_position = by_name.replace(f"$ns_{package}", "$ns[0]")
    want = jq.compile(by_name.replace(f"$ns_{package}", "$package"), args={"package": json.loads(package_text)})
    expected = list(want.input_value(json.loads(lock_text)).all())
    assert expected[0]  # the join found the locked version of every dependency
    for joined in (by_name, by_position):
        result = await select(client, lock, joined, artifact_namespaces=[package])
        assert not result.is_error, text_of(result)
        assert outputs(text_of(result)) == expected


async def test_jq_errors_and_non_json_items_say_what_is_wrong(memory: TaskMemory, client: Client) -> None:
    namespace = store_json_text(memory, LOCK.read_text(), "fs.read_text_file")
    syntax = await select(client, namespace, ".packages | map(.version")
    assert syntax.is_error
    assert "syntax error" in text_of(syntax)
    assert "line 1" in text_of(syntax)
    runtime = await select(client, namespace, ".packages[0]")
    assert runtime.is_error
    assert "Cannot index object with number" in text_of(runtime)
    modules = await select(client, namespace, 'import "data" as $d; $d')
    assert modules.is_error
    assert "import" in text_of(modules)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    mixed = memory.store([TextArtifact(value="Here is the chart."), ImageArtifact(value=png)], tool="plot").namespace
    image = await select(client, mixed, "length", item=1)
    assert image.is_error
    assert "image/png, not JSON" in text_of(image)
    assert "JSON Lines. Load this item with memory_load." in text_of(image)  # no JSON elsewhere to point to
    with_json = memory.store(
        [TextArtifact(value="3 packages found"), from_block(mt.TextContent(text=PACKAGE.read_text()))], tool="t"
    ).namespace
    pointed = await select(client, with_json, "length")
    assert pointed.is_error
    assert "(text) is not JSON" in text_of(pointed)
    assert "Its JSON is in item 1." in text_of(pointed)
    three = memory.store([TextArtifact(value="a"), ImageArtifact(value=png), TextArtifact(value="b")], tool="t")
    assert "Its JSON is in" not in text_of(await select(client, three.namespace, "length", item=1))
    prose = await select(client, mixed, "length")  # no JSON anywhere: the text's lines, as `jq -R` reads them
    assert not prose.is_error, text_of(prose)
    assert outputs(text_of(prose)) == [1]


async def test_joining_a_result_that_holds_no_json_reads_its_lines(memory: TaskMemory, client: Client) -> None:
    namespace = store_json_text(memory, PACKAGE.read_text(), "fs.read_text_file")
    prose = memory.store([TextArtifact(value="just words here")], tool="notes").namespace
    joined = await select(client, namespace, "[.name, $ns[0]]", artifact_namespaces=[prose])
    assert not joined.is_error, text_of(joined)
    assert outputs(text_of(joined)) == [
        [json.loads(PACKAGE.read_text())["name"], [{"line": 1, "text": "just words here"}]]
    ]


async def test_a_caller_selects_only_its_own_namespaces(memory: TaskMemory) -> None:
    mine = store_json_text(memory, PACKAGE.read_text(), "fs.read_text_file", owner="alice")
    theirs = store_json_text(memory, LOCK.read_text(), "fs.read_text_file", owner="bob")
    answer = await memory_select(memory, SelectArgs(artifact_namespace=mine, expression=".name"), "alice")
    assert text_of(answer) == json.dumps(json.loads(PACKAGE.read_text())["name"])
    with pytest.raises(NotFoundError):
        await memory_select(memory, SelectArgs(artifact_namespace=theirs, expression="length"), "alice")
    joined = SelectArgs(artifact_namespace=mine, expression="$ns[0] | length", artifact_namespaces=[theirs])
    with pytest.raises(NotFoundError):
        await memory_select(memory, joined, "alice")


async def test_each_limit_stops_the_expression_and_the_server_keeps_serving(memory: TaskMemory) -> None:
    memory.selector.close()
    memory.selector = Selector(SelectLimits(seconds=6, output_bytes=200_000, memory_bytes=512 * 1024**2))
    namespace = store_json_text(memory, LOCK.read_text(), "fs.read_text_file")
    other = memory.store([TextArtifact(value=ndjson_log(100))], tool="logs.tail").namespace
    async with Client(build_server(memory)) as looping, Client(build_server(memory)) as another:
        results: dict[str, mt.CallToolResult] = {}

        async def run_loop() -> None:
            results["loop"] = await select(looping, namespace, "def f: f; f")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_loop)
            # The selector offers no event to wait on: poll until the looping expression is in its worker.
            while memory.selector._running == 0:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            listed = await another.call_tool("memory_list", {})
            counted = await select(another, other, "length")
            assert "loop" not in results  # both answered while the loop was still running
        assert not listed.is_error
        assert namespace in text_of(listed)
        assert text_of(counted) == "100"
        assert results["loop"].is_error
        assert "time limit of 6 s" in text_of(results["loop"])

        endless = await select(another, namespace, "repeat(1)")
        assert endless.is_error
        assert "output limit" in text_of(endless)
        huge = await select(another, namespace, '"x" * 1e9 | length')
        assert huge.is_error
        assert "memory limit" in text_of(huge)
        exploding = await select(another, namespace, "[range(1e9)]")
        assert exploding.is_error
        assert "memory limit" in text_of(exploding) or "time limit" in text_of(exploding)
        after = await select(looping, namespace, ".packages | length")
        assert not after.is_error
        assert int(text_of(after)) == len(json.loads(LOCK.read_text())["packages"])


def test_memory_tools_list_stays_within_its_token_budget() -> None:
    tools = [t.definition().model_dump(mode="json", by_alias=True, exclude_none=True) for t in TOOLS.values()]
    assert "memory_select" in {t["name"] for t in tools}
    assert count_tokens(json.dumps({"tools": tools})) <= 1600


def test_structured_content_is_selected_like_a_json_text(memory: TaskMemory) -> None:
    original = json.loads(PACKAGE.read_text())
    result = mt.CallToolResult(content=[mt.TextContent(text="done")], structured_content=original)
    namespace = memory.store(from_result(result), tool="t").namespace
    selected = memory.select(namespace, ".dependencies | keys", item=1)
    assert json.loads(selected.text) == sorted(original["dependencies"])


def test_a_json_resource_is_selected_like_a_json_text(memory: TaskMemory) -> None:
    text = LOCK.read_text()
    resource = mt.TextResourceContents(uri="file:///peers/package-lock.json", mime_type="application/json", text=text)
    result = mt.CallToolResult(content=[mt.EmbeddedResource(type="resource", resource=resource)])
    namespace = memory.store(from_result(result), tool="fs.read_resource").namespace
    expression = '[.packages[] | select(.license == "MIT")] | length'
    assert json.loads(memory.select(namespace, expression).text) == jq_all(expression, json.loads(text))[0]


async def test_a_worker_killed_between_calls_is_replaced(memory: TaskMemory, client: Client) -> None:
    namespace = store_json_text(memory, PACKAGE.read_text(), "fs.read_text_file")
    assert text_of(await select(client, namespace, "length")) == str(len(json.loads(PACKAGE.read_text())))
    for worker in memory.selector._idle:
        worker.process.kill()
        worker.process.wait()
    again = await select(client, namespace, ".name")
    assert not again.is_error, text_of(again)
    assert json.loads(text_of(again)) == json.loads(PACKAGE.read_text())["name"]


def test_pages_of_any_text_join_back_and_hold_at_most_max_tokens() -> None:
    text = json.dumps(
        [{"名前": "日本語のテキスト" * 3, "emoji": "🎉🧪" * 5, "n": i} for i in range(200)], ensure_ascii=False
    )
    for max_tokens in (1, 7, 100):
        parts: list[str] = []
        offset: int | None = 0
        while offset is not None:
            window = page(text, offset, max_tokens)
            assert window.text
            assert count_tokens(window.text) <= max_tokens or len(window.text) == 1  # a page holds a whole character
            parts.append(window.text)
            offset = window.next_offset
        assert "".join(parts) == text
    assert page("", 0, 10).next_offset is None
    with pytest.raises(InvalidArgumentError):
        page(text, len(text), 10)
