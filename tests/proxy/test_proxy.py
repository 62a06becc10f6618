"""The proxy end to end: real downstream servers as subprocesses, offprompt in process.

Every small result is fetched twice, directly and through offprompt, and must
be the same (the sparfenyuk/mcp-proxy idea).
"""

from __future__ import annotations

import base64
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from offprompt.config import LoadedConfig, StdioServer, parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.routes import public_name
from offprompt.serve.app import build_server

from ..support import REPO, node_peer, noise_png
from ..support import meta as offprompt_meta
from ..support import text_of as text

pytestmark = pytest.mark.anyio

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
TIME = str(Path(sys.executable).with_name("mcp-server-time"))


@asynccontextmanager
async def through_offprompt(memory: TaskMemory, config: LoadedConfig) -> AsyncIterator[tuple[Client, Proxy]]:
    proxy = Proxy(config.servers, default_timeout=config.settings.call_timeout_seconds)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        yield client, proxy


@asynccontextmanager
async def direct(server: StdioServer) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=server.command, args=server.args, env={**os.environ, **server.env})
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


def same(a: mt.CallToolResult, b: mt.CallToolResult) -> None:
    assert a.is_error == b.is_error
    assert a.structured_content == b.structured_content
    assert [c.model_dump(by_alias=True) for c in a.content] == [c.model_dump(by_alias=True) for c in b.content]


def counter(log: Path, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [COUNTER], "env": {"COUNTER_LOG": str(log)}, **extra}


async def read_all(client: Client, namespace: str, item: int = 0) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = await client.call_tool(
            "memory_load", {"artifact_namespace": namespace, "item": item, "offset": offset, "max_tokens": 20000}
        )
        parts.append(text(result))
        offset = offprompt_meta(result)["next_offset"]
    return "".join(parts)


def test_public_names_are_prefixed_safe_and_short() -> None:
    assert public_name("fs", "read_file") == "fs__read_file"
    assert public_name("my server", "get.thing") == "my_server__get_thing"
    long = public_name("s" * 40, "t" * 40)
    assert len(long) == 64
    assert long == public_name("s" * 40, "t" * 40)
    assert long != public_name("s" * 40, "t" * 39 + "u")


async def test_small_results_pass_through_unchanged(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config({"mcpServers": {"counter": counter(tmp_path / "log"), "time": {"command": TIME}}})
    calls = [
        ("counter", "echo", {"text": "héllo"}),
        ("counter", "fail", {"reason": "no such row"}),
        (
            "time",
            "convert_time",
            {"source_timezone": "Europe/London", "time": "14:00", "target_timezone": "Asia/Tokyo"},
        ),
        ("time", "get_current_time", {"timezone": "Not/AZone"}),
    ]
    async with through_offprompt(memory, config) as (client, _):
        for server, tool, arguments in calls:
            async with direct(config.servers[server]) as session:  # type: ignore[arg-type]
                expected = await session.call_tool(tool, arguments)
            got = await client.call_tool(public_name(server, tool), arguments)
            same(got, expected)
    assert memory.recent() == []


async def test_tools_are_relisted_with_prefixes_and_without_output_schema(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config({"mcpServers": {"counter": counter(tmp_path / "log"), "time": {"command": TIME}}})
    async with through_offprompt(memory, config) as (client, proxy):
        await proxy.ready()  # both up: a listing waits 3 s for them, which a busy machine can pass
        tools = {t.name: t for t in (await client.list_tools()).tools}
    async with direct(config.servers["counter"]) as session:  # type: ignore[arg-type]
        echo = next(t for t in (await session.list_tools()).tools if t.name == "echo")
    assert {"memory_load", "counter__echo", "counter__lines", "time__get_current_time", "time__convert_time"} <= set(
        tools
    )
    assert echo.output_schema is not None
    assert tools["counter__echo"].output_schema is None
    assert tools["counter__echo"].input_schema == echo.input_schema
    assert tools["counter__echo"].description == echo.description


async def test_a_large_result_becomes_a_reference_that_reads_back_exactly(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config(
        {"offprompt": {"threshold_tokens": 2000}, "mcpServers": {"counter": counter(tmp_path / "log")}}
    )
    async with direct(config.servers["counter"]) as session:  # type: ignore[arg-type]
        original = text(await session.call_tool("lines", {"count": 5000}))
    async with through_offprompt(memory, config) as (client, _):
        result = await client.call_tool("counter__lines", {"count": 5000})
        ref = offprompt_meta(result)
        assert text(result).startswith('Output of "counter.lines" was stored in memory with memory_name "test"')
        assert result.structured_content is None
        assert "handled request 4999" not in text(result)
        assert await read_all(client, ref["artifact_namespace"]) == original
        listed = offprompt_meta(await client.call_tool("memory_list", {}))["namespaces"][0]
        assert listed["tool"] == "counter.lines"
        assert listed["arguments"] == {"count": 5000}


async def test_always_stores_even_a_tiny_result_and_shows_none_of_it(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config(
        {
            "offprompt": {"preview_tokens": 50},
            "mcpServers": {"vault": counter(tmp_path / "log", tools={"echo": {"off_prompt": "always"}})},
        }
    )
    async with through_offprompt(memory, config) as (client, _):
        result = await client.call_tool("vault__echo", {"text": "hunter2"})
        assert "hunter2" not in str(result.model_dump())
        namespace = offprompt_meta(result)["artifact_namespace"]
        assert await read_all(client, namespace) == "hunter2"
        errors = await client.call_tool("vault__fail", {"reason": "denied"})
        assert errors.is_error  # errors are never stored
        assert "denied" in text(errors)


async def test_a_killed_downstream_fails_its_own_calls_and_restarts(memory: TaskMemory, tmp_path: Path) -> None:
    log = tmp_path / "log"
    config = parse_config({"mcpServers": {"counter": counter(log), "time": {"command": TIME}}})
    convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}
    async with through_offprompt(memory, config) as (client, _):
        pid = int(text(await client.call_tool("counter__pid", {})))
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(10):
            while True:  # wait until the process is gone
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                await anyio.sleep(0.05)
        failed = await client.call_tool("counter__echo", {"text": "x"})
        assert failed.is_error
        # "had stopped (exit code -9)" once offprompt has seen the exit, "stopped during the call" if the call
        # reached the pipe first: either way the call names the server and the way out.
        assert text(failed).startswith('MCP server "counter"')
        assert "stopped" in text(failed)
        assert text(failed).endswith("offprompt starts it again on the next call.")
        assert not (await client.call_tool("time__convert_time", convert)).is_error
        again = await client.call_tool("counter__echo", {"text": "back"})
        assert not again.is_error
        assert text(again) == "back"
        assert int(text(await client.call_tool("counter__pid", {}))) != pid
    assert len(log.read_text().split()) == 2


async def test_a_call_the_client_cancels_is_cancelled_downstream_too(memory: TaskMemory, tmp_path: Path) -> None:
    # A 2026-07-28 client takes the SDK path (not the fast lane): its cancellation must still reach the server
    # doing the work, or a cancelled slow call keeps it busy.
    events = tmp_path / "events"
    server = counter(tmp_path / "log", env={"COUNTER_LOG": str(tmp_path / "log"), "COUNTER_EVENTS": str(events)})
    config = parse_config({"mcpServers": {"counter": server}})

    async def until_seen(*expected: str) -> None:
        with anyio.fail_after(10):  # bounds a hang: each event comes within milliseconds
            while True:  # the downstream writes its events to a file: poll it
                if events.exists() and events.read_text().split("\n")[:-1] == list(expected):
                    return
                await anyio.sleep(0.05)

    async with through_offprompt(memory, config) as (client, _):
        assert client.protocol_version == "2026-07-28"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "counter__sleep", {"seconds": 60})
            await until_seen("ready", "sleep started")
            tg.cancel_scope.cancel()
        await until_seen("ready", "sleep started", "sleep cancelled")
        assert text(await client.call_tool("counter__echo", {"text": "still here"})) == "still here"


async def test_one_initialize_per_downstream_across_100_calls(memory: TaskMemory, tmp_path: Path) -> None:
    log = tmp_path / "log"
    config = parse_config({"mcpServers": {"counter": counter(log)}})
    async with through_offprompt(memory, config) as (client, proxy):
        results: list[mt.CallToolResult] = []

        async def call(i: int) -> None:
            results.append(await client.call_tool("counter__echo", {"text": str(i)}))

        async with anyio.create_task_group() as tg:  # concurrently: one session serves them all
            for i in range(100):
                tg.start_soon(call, i)
        assert sorted(int(text(r)) for r in results) == list(range(100))
        assert proxy.downstreams["counter"].starts == 1
    assert len(log.read_text().split()) == 1


async def test_a_broken_server_is_reported_and_the_others_serve(
    memory: TaskMemory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = {
        "mcpServers": {
            "typo": {"comand": "npx"},
            "missing": {"command": str(tmp_path / "no-such-program")},
            "remote": {"url": "http://127.0.0.1:9/mcp"},
            "time": {"command": TIME},
        }
    }
    config = parse_config(raw)
    assert "typo" in config.problems
    assert "comand" in config.problems["typo"]
    assert "command" in config.problems["typo"]  # the suggestion
    assert set(config.servers) == {"missing", "remote", "time"}
    async with through_offprompt(memory, config) as (client, proxy):
        await proxy.ready()
        names = {t.name for t in (await client.list_tools()).tools}
        assert "time__convert_time" in names
        ok = await client.call_tool(
            "time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert not ok.is_error
    logged = caplog.text
    assert 'MCP server "missing" could not be started' in logged
    assert "no-such-program" in logged
    assert 'MCP server "remote" could not be started (url http://127.0.0.1:9/mcp)' in logged


@pytest.mark.node
async def test_server_everything_through_offprompt(memory: TaskMemory) -> None:
    everything = node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")
    config = parse_config(
        {
            "offprompt": {"threshold_tokens": 1000},
            "mcpServers": {"everything": {**everything, "tools": {"get-tiny-image": {"off_prompt": "always"}}}},
        }
    )
    small = [
        ("echo", {"message": "hi"}),
        ("get-sum", {"a": 2, "b": 3}),
        ("get-sum", {"a": "two", "b": 3}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-resource-links", {"count": 3}),
        ("get-structured-content", {"location": "Chicago"}),
    ]
    async with direct(config.servers["everything"]) as session:  # type: ignore[arg-type]
        expected = [await session.call_tool(tool, args) for tool, args in small]
        image = await session.call_tool("get-tiny-image", {})
        big = await session.call_tool("echo", {"message": "word " * 20000})
    async with through_offprompt(memory, config) as (client, _):
        for (tool, args), want in zip(small, expected, strict=True):
            same(await client.call_tool(f"everything__{tool}", args), want)
        stored = await client.call_tool("everything__get-tiny-image", {})
        namespace = offprompt_meta(stored)["artifact_namespace"]
        assert offprompt_meta(stored)["kinds"] == ["text", "image", "text"]
        loaded = await client.call_tool("memory_load", {"artifact_namespace": namespace, "item": 1})
        png = loaded.content[0]
        original = image.content[1]
        assert isinstance(png, mt.ImageContent)
        assert isinstance(original, mt.ImageContent)
        assert base64.b64decode(png.data) == base64.b64decode(original.data)
        big_ref = await client.call_tool("everything__echo", {"message": "word " * 20000})
        assert await read_all(client, offprompt_meta(big_ref)["artifact_namespace"]) == text(big)


@pytest.mark.node
async def test_filesystem_and_time_at_once(memory: TaskMemory, tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    big = "".join(f"{i:07d} the quick brown fox jumps over the lazy dog\n" for i in range(20000))
    (root / "big.txt").write_text(big)
    assert len(big.encode()) >= 1_000_000
    config = parse_config(
        {
            "mcpServers": {
                "fs": node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(root)),
                "time": {"command": TIME},
            }
        }
    )
    async with through_offprompt(memory, config) as (client, proxy):
        await proxy.ready()  # both up: a listing waits 3 s for them, which a busy machine can pass
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"fs__read_text_file", "time__convert_time"} <= names
        result = await client.call_tool("fs__read_text_file", {"path": str(root / "big.txt")})
        ref = offprompt_meta(result)
        assert ref["tool"] == "fs.read_text_file"
        assert ref["bytes"] == len(big.encode())  # its structuredContent copy is kept, not counted again
        assert await read_all(client, ref["artifact_namespace"]) == big
        small = await client.call_tool("fs__list_directory", {"path": str(root)})
        assert "big.txt" in text(small)


async def test_tool_list_changes_reach_a_2025_client(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config({"mcpServers": {"counter": counter(tmp_path / "log")}})
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    proxy = Proxy(config.servers)
    server = build_server(memory, proxy)
    async with proxy.running(), Client(server, mode="legacy", message_handler=on_message) as client:
        assert client.protocol_version == "2025-11-25"
        assert "counter__extra" not in {t.name for t in (await client.list_tools()).tools}
        assert text(await client.call_tool("counter__grow", {})) == "grown"
        with anyio.fail_after(60):  # a bound on the wait, not a figure: 10 s ran out once at load 10
            await changed.wait()
        assert text(await client.call_tool("counter__extra", {})) == "extra tool"


async def test_a_server_slow_to_start_holds_up_neither_the_listing_nor_the_others(
    memory: TaskMemory, tmp_path: Path
) -> None:
    # An `npx -y` server downloads itself on its first run, and clients give a request about a minute. The
    # listing waits for it only so long; the other servers' tools are listed and called meanwhile, and the
    # slow server's tools are announced when it is up.
    slow = counter(tmp_path / "slow.log", env={"COUNTER_LOG": str(tmp_path / "slow.log"), "COUNTER_START_DELAY": "5"})
    config = parse_config({"mcpServers": {"fast": counter(tmp_path / "fast.log"), "slow": slow}})
    changed = {"tools": anyio.Event(), "prompts": anyio.Event(), "resources": anyio.Event()}

    async def on_message(message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed["tools"].set()
        if isinstance(message, mt.PromptListChangedNotification):
            changed["prompts"].set()
        if isinstance(message, mt.ResourceListChangedNotification):
            changed["resources"].set()

    proxy = Proxy(config.servers, list_wait=0.5)
    async with proxy.running(), Client(build_server(memory, proxy), mode="legacy", message_handler=on_message) as c:
        with anyio.fail_after(30):
            while True:  # until the fast one is up; the slow one sleeps 5 s first
                if proxy.downstreams["fast"].running:
                    break
                await anyio.sleep(0.05)
        names = {t.name for t in (await c.list_tools()).tools}
        assert "fast__echo" in names
        assert "slow__echo" not in names
        assert text(await c.call_tool("fast__echo", {"text": "now"})) == "now"
        await c.list_prompts()
        await c.list_resources()
        assert not proxy.downstreams["slow"].running  # neither the call nor the listings waited for it
        with anyio.fail_after(60):
            for event in changed.values():  # tools, prompts and resources: the client lists each again
                await event.wait()
        assert "slow__echo" in {t.name for t in (await c.list_tools()).tools}
        assert text(await c.call_tool("slow__echo", {"text": "late"})) == "late"


async def test_tool_list_changes_reach_a_2026_listener(memory: TaskMemory, tmp_path: Path) -> None:
    config = parse_config({"mcpServers": {"counter": counter(tmp_path / "log")}})
    proxy = Proxy(config.servers)
    async with proxy.running(), Client(build_server(memory, proxy)) as client:
        assert client.protocol_version == "2026-07-28"
        await client.list_tools()
        async with client.listen(tools_list_changed=True) as subscription:
            assert text(await client.call_tool("counter__grow", {})) == "grown"
            with anyio.fail_after(60):  # a hang guard; a late start's own announcement may come first
                async for _event in subscription:
                    if "counter__extra" in {t.name for t in (await client.list_tools()).tools}:
                        break


@pytest.mark.node
async def test_progress_resources_and_prompts_pass_through(memory: TaskMemory) -> None:
    config = parse_config(
        {"mcpServers": {"everything": node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")}}
    )
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with through_offprompt(memory, config) as (client, _):
        result = await client.call_tool(
            "everything__trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
        )
        assert not result.is_error
        assert progress == [(1, 3), (2, 3), (3, 3)]

        resources = (await client.list_resources()).resources
        docs = [r for r in resources if str(r.uri).startswith("demo://resource/static/document/")]
        assert docs
        assert docs[0].name.startswith("everything__")
        read = await client.read_resource(str(docs[0].uri))
        assert isinstance(read.contents[0], mt.TextResourceContents)
        assert read.contents[0].text

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "everything__simple-prompt" in prompts
        prompt = await client.get_prompt("everything__args-prompt", {"city": "Oslo"})
        assert "Oslo" in str(prompt.messages[0].content)


async def test_a_server_that_failed_to_start_is_tried_again(
    memory: TaskMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import offprompt.proxy.downstreams

    monkeypatch.setattr(offprompt.proxy.downstreams, "RETRY_SECONDS", 0.0)
    launcher = tmp_path / "late-server"
    config = parse_config({"mcpServers": {"late": {"command": str(launcher)}}})
    async with through_offprompt(memory, config) as (client, _):
        assert not [t for t in (await client.list_tools()).tools if t.name.startswith("late__")]
        launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {COUNTER}\n")  # the user fixes the server
        launcher.chmod(0o755)
        with anyio.fail_after(30):
            while "late__echo" not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110 - polls the server
                await anyio.sleep(0.2)
        assert text(await client.call_tool("late__echo", {"text": "finally"})) == "finally"


async def test_a_tool_of_a_server_that_failed_to_start_says_why_and_is_tried_again_on_the_call(
    memory: TaskMemory, tmp_path: Path
) -> None:
    # Before: "Unknown tool: late__echo. Call tools/list to see the tools." A client that had the tool in a list
    # of an earlier start (its own, or offprompt's start-up cache) learned nothing of the server or its fix.
    launcher = tmp_path / "late-server"
    config = parse_config({"mcpServers": {"late": {"command": str(launcher)}}})
    async with through_offprompt(memory, config) as (client, _):
        assert not [t for t in (await client.list_tools()).tools if t.name.startswith("late__")]
        failed = await client.call_tool("late__echo", {"text": "now?"})
        assert failed.is_error
        assert 'MCP server "late" could not be started' in text(failed)
        assert "tries again on the next call" in text(failed)
        launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {COUNTER}\n")  # the user fixes the server
        launcher.chmod(0o755)
        assert text(await client.call_tool("late__echo", {"text": "finally"})) == "finally"  # no list first
        with pytest.raises(MCPError, match="Unknown tool: late__nothing"):  # its server runs: a name it lacks
            await client.call_tool("late__nothing", {})


@pytest.mark.node
async def test_an_image_and_its_base64_copy_in_structured_content_are_never_searched_as_text(
    memory: TaskMemory, tmp_path: Path
) -> None:
    # server-filesystem's read_media_file sends the image, and the same base64 again in structuredContent.
    root = tmp_path / "files"
    root.mkdir()
    picture = noise_png(400, 300)
    (root / "shot.png").write_bytes(picture)
    config = parse_config(
        {"mcpServers": {"fs": node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(root))}}
    )
    async with through_offprompt(memory, config) as (client, _):
        result = await client.call_tool("fs__read_media_file", {"path": str(root / "shot.png")})
        ref = offprompt_meta(result)
        namespace = ref["artifact_namespace"]
        assert ref["kinds"] == ["image", "json"]
        assert ref["tokens"] == 0  # not the ~400,000 tokens of its base64
        assert ref["bytes"] == len(picture)  # the copy is kept but counted once
        assert "a copy of item 0" in text(result)
        listed = offprompt_meta(await client.call_tool("memory_list", {}))["namespaces"]
        assert (listed[0]["tokens"], listed[0]["bytes"]) == (0, len(picture))
        # Kept losslessly: the image, and the structuredContent byte for byte.
        image = (await client.call_tool("memory_load", {"artifact_namespace": namespace})).content[0]
        assert isinstance(image, mt.ImageContent)
        assert base64.b64decode(image.data) == picture
        copy = await read_all(client, namespace, item=1)
        assert base64.b64encode(picture).decode() in copy
        # Never search text: no chunk to grep, embed or rank, and nothing left for the indexer to do.
        b64_line = base64.b64encode(picture).decode()[1000:1040]
        grep = await client.call_tool("memory_grep", {"pattern": b64_line.replace("+", "\\+")})
        assert offprompt_meta(grep)["matches"] == []
        assert memory.text.pending() == set()
        assert memory.text.wait_indexed(timeout=5)
        hits = offprompt_meta(await client.call_tool("memory_query", {"query": b64_line, "mode": "lexical"}))
        assert hits["results"] == []
