"""`offprompt serve --config` over real stdio: proxied calls from a 2025-era client take the fast lane."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from offprompt.policy import result_text_size
from offprompt.tokens import count_tokens

from ..support import REPO, node_peer, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio

COUNTER = str(REPO / "tests" / "servers" / "counter.py")


@asynccontextmanager
async def session(command: str, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=list(args), env=subprocess_env(**(env or {})))
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        client = await stack.enter_async_context(ClientSession(read, write))
        await client.initialize()
        yield client


@asynccontextmanager
async def offprompt(tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[ClientSession]:
    path = tmp_path / "offprompt.json"
    path.write_text(json.dumps(config))
    command, *args = offprompt_command("serve", "--config", str(path), "--data-dir", str(tmp_path / "data"))
    async with session(command, *args) as client:
        yield client


def dump(result: Any) -> Any:
    return result.model_dump(by_alias=True, exclude={"meta"})


async def test_small_results_come_back_exactly_as_the_downstream_wrote_them(tmp_path: Path) -> None:
    config = {
        "offprompt": {"threshold_tokens": 1000},
        "mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}},
    }
    calls = [("echo", {"text": "héllo 🎉"}), ("fail", {"reason": "nope"}), ("lines", {"count": 3})]
    async with session(sys.executable, COUNTER) as direct:
        expected = [await direct.call_tool(tool, args) for tool, args in calls]
    async with offprompt(tmp_path, config) as client:
        for (tool, args), want in zip(calls, expected, strict=True):
            assert dump(await client.call_tool(f"counter__{tool}", args)) == dump(want)
        missing = await client.call_tool("counter__echo", {})  # bad arguments: the downstream's own error
        assert missing.is_error


async def test_large_results_are_stored_and_read_back(tmp_path: Path) -> None:
    config = {
        "offprompt": {"threshold_tokens": 1000},
        "mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}},
    }
    async with session(sys.executable, COUNTER) as direct:
        original = (await direct.call_tool("lines", {"count": 3000})).content[0].text  # type: ignore[union-attr]
    async with offprompt(tmp_path, config) as client:
        result = await client.call_tool("counter__lines", {"count": 3000})
        assert result.structured_content is None
        assert result.meta is not None
        namespace = result.meta["offprompt"]["artifact_namespace"]
        parts, offset = [], 0
        while offset is not None:
            window = await client.call_tool(
                "memory_load", {"artifact_namespace": namespace, "offset": offset, "max_tokens": 20000}
            )
            parts.append(window.content[0].text)  # type: ignore[union-attr]
            assert window.meta is not None
            offset = window.meta["offprompt"]["next_offset"]
        assert "".join(parts) == original


async def test_a_small_result_of_an_always_tool_never_comes_back_inline(tmp_path: Path) -> None:
    # A sensitive tool: even two words must be stored, for the 2025-era client whose calls take the fast lane.
    config = {"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER], "off_prompt": "always"}}}
    async with offprompt(tmp_path, config) as client:
        result = await client.call_tool("counter__echo", {"text": "hunter2 password"})
        assert not result.is_error
        assert "hunter2" not in json.dumps(dump(result))
        assert result.meta is not None
        namespace = result.meta["offprompt"]["artifact_namespace"]
        loaded = await client.call_tool("memory_load", {"artifact_namespace": namespace})
        assert loaded.content[0].text == "hunter2 password"  # type: ignore[union-attr]


async def test_dense_text_one_token_over_the_threshold_is_stored_not_relayed(tmp_path: Path) -> None:
    # Hex digests are under two bytes a token: a byte pre-check must not let them through as "small".
    hashes = "".join(hashlib.sha256(str(i).encode()).hexdigest() + "\n" for i in range(60))
    async with session(sys.executable, COUNTER) as direct:
        original = await direct.call_tool("echo", {"text": hashes})
    size, text = result_text_size(mt.CallToolResult.model_validate(dump(original)))  # text and structured content
    tokens = count_tokens(text)
    assert size < 2 * tokens
    config = {
        "offprompt": {"threshold_tokens": tokens - 1},
        "mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}},
    }
    async with offprompt(tmp_path, config) as client:
        result = await client.call_tool("counter__echo", {"text": hashes})
        assert result.meta is not None, "relayed inline"
        assert "artifact_namespace" in result.meta["offprompt"]


@pytest.mark.node
async def test_progress_passes_through_the_fast_lane(tmp_path: Path) -> None:
    everything = node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with offprompt(tmp_path, {"mcpServers": {"everything": everything}}) as client:
        result = await client.call_tool(
            "everything__trigger-long-running-operation", {"duration": 1, "steps": 2}, progress_callback=on_progress
        )
        assert not result.is_error
        assert progress == [(1, 2), (2, 2)]


async def test_other_calls_are_answered_while_a_wide_result_is_stored(tmp_path: Path) -> None:
    # 16 MiB of `zzz…` froze the server: memory_list waited 26 s while the line was counted on the event loop.
    events = tmp_path / "events"
    server = {"command": sys.executable, "args": [COUNTER], "env": {"COUNTER_EVENTS": str(events)}}
    size = 8 << 20
    answered: list[str] = []
    async with offprompt(tmp_path, {"mcpServers": {"counter": server}}) as client:
        stored: list[mt.CallToolResult] = []

        async def call_wide() -> None:
            stored.append(await client.call_tool("counter__wide", {"size": size}))
            answered.append("wide")

        async with anyio.create_task_group() as group:
            group.start_soon(call_wide)
            while "wide answered" not in (events.read_text() if events.exists() else ""):  # noqa: ASYNC110
                await anyio.sleep(0.05)  # until the downstream has answered: the line is offprompt's to store now
            listed = await client.call_tool("memory_list", {})
            answered.append("list")
        assert answered == ["list", "wide"]  # answered while the wide result was being looked at and stored
        assert not listed.is_error
        assert stored[0].meta is not None
        reference = stored[0].meta["offprompt"]
        assert reference["bytes"] == size
        tail = await client.call_tool(
            "memory_load", {"artifact_namespace": reference["artifact_namespace"], "offset": reference["tokens"] - 3}
        )
        assert tail.content[0].text == "zzzzzz"  # type: ignore[union-attr]
