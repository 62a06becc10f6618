"""Secrets wherever a downstream puts them, and handles only where they may go, on both proxy paths.

The downstream is tests/servers/hostile.py (raw JSON-RPC, so its errors carry any code) beside
tests/servers/recording.py; each test runs through the SDK path (in process) and the stdio fast lane (a served
subprocess), which must answer alike.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as mt
import orjson
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from offprompt.config import parse_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.secrets import HANDLE
from offprompt.serve.app import build_server
from tests.support import REPO, offprompt_command, served_over_pipes, subprocess_env

pytestmark = pytest.mark.anyio

HOSTILE = REPO / "tests" / "servers" / "hostile.py"
RECORDING = REPO / "tests" / "servers" / "recording.py"
AWS_KEY = "AKIAQX7Z3N5B2LMRTW4E"
GITHUB_TOKEN = "ghp_" + "Zq7sKc2Vw9LmXb4Tn8Rd1Hf6Jy3Pg5Ae0Ui2"

Call = Callable[[str, dict[str, Any]], Awaitable[mt.CallToolResult]]


def servers(tmp_path: Path, **evil: Any) -> dict[str, Any]:
    return {
        "mcpServers": {
            "evil": {
                "command": sys.executable,
                "args": [str(HOSTILE), str(tmp_path / "evil.jsonl")],
                "tools": {"sensitive_error": {"off_prompt": "always"}},
                **evil,
            },
            "other": {"command": sys.executable, "args": [str(RECORDING), str(tmp_path / "other.jsonl")]},
        }
    }


@asynccontextmanager
async def proxied(path: str, tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[Call]:
    """A call into offprompt over `path`: "sdk" (in process) or "fast_lane" (a served subprocess over stdio)."""
    if path == "sdk":
        loaded = parse_config(config)
        memory = TaskMemory.open(MemorySettings(name="test", data_dir=tmp_path / "data"))
        proxy = Proxy(loaded.servers)
        try:
            async with proxy.running(), Client(build_server(memory, proxy, loaded.settings)) as client:
                yield client.call_tool
        finally:
            memory.close()
        return
    (tmp_path / "offprompt.json").write_text(json.dumps(config))
    command, *args = offprompt_command(
        "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
    )
    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    with (tmp_path / "stderr.log").open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # 2025-11-25: proxied calls take the fast lane

            async def call(name: str, arguments: dict[str, Any]) -> mt.CallToolResult:
                return await session.call_tool(name, arguments)

            yield call


PATHS = pytest.mark.parametrize("path", ["sdk", "fast_lane"])


def wire(result: object) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True))  # type: ignore[attr-defined]


def recorded(file: Path) -> list[Any]:
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


@PATHS
@pytest.mark.parametrize("code", [-32000, -32603, -32602, 1])
async def test_a_downstreams_error_is_its_answer_with_the_key_as_a_handle(path: str, code: int, tmp_path: Path) -> None:
    async with proxied(path, tmp_path, servers(tmp_path)) as call:
        with pytest.raises(MCPError) as failed:
            await call("evil__error", {"code": code})
        after = await call("evil__echo", {"text": "still there"})
    error = failed.value
    assert error.code == code  # relayed as the server's own error, not as "stopped"
    assert "stopped" not in error.message
    assert AWS_KEY not in error.message
    assert AWS_KEY not in json.dumps(error.error.data)
    assert HANDLE.search(error.message) is not None
    assert not after.is_error  # the server was not restarted or failed for it


@PATHS
@pytest.mark.parametrize("code", [-32000, -32603, -32602, 1])
async def test_a_sensitive_tools_protocol_error_is_stored_and_answered_with_its_reference(
    path: str, code: int, tmp_path: Path
) -> None:
    async with proxied(path, tmp_path, servers(tmp_path)) as call:
        answer = await call("evil__sensitive_error", {"code": code})
        assert answer.is_error
        shown = wire(answer)
        assert "TOPSECRET" not in shown
        assert AWS_KEY not in shown
        assert "marked sensitive" in shown
        meta = (answer.meta or {})["offprompt"]
        loaded = await call("memory_load", {"artifact_namespace": meta["artifact_namespace"]})
    stored = loaded.content[0]
    assert isinstance(stored, mt.TextContent)
    assert stored.text.startswith(f"JSON-RPC error {code}: failed for TOPSECRET ⟦secret:")  # stored redacted
    assert AWS_KEY not in wire(loaded)


@PATHS
async def test_secrets_in_uris_names_and_meta_become_handles_and_uris_stay_valid(path: str, tmp_path: Path) -> None:
    async with proxied(path, tmp_path, servers(tmp_path)) as call:
        result = await call("evil__links", {})
        shown = wire(result)
        assert AWS_KEY not in shown
        assert GITHUB_TOKEN not in shown
        link, embedded = result.content[1], result.content[2]
        assert isinstance(link, mt.ResourceLink)
        assert isinstance(embedded, mt.EmbeddedResource)
        assert " " not in str(link.uri)  # the handle is percent-encoded: the URI is still one
        assert str(link.uri).startswith("https://bucket.example/report.csv?X-Amz-Credential=%E2%9F%A6secret%3A")
        assert HANDLE.search(link.name) is not None
        assert HANDLE.search(link.description or "") is not None
        assert str(embedded.resource.uri).startswith("file:///x?token=%E2%9F%A6secret%3A")
        assert result.meta is not None
        assert "progressToken" not in result.meta  # offprompt's own key: a progress gets the client's own token
        assert HANDLE.search(result.meta["download"]) is not None

        # The URI as shown, passed back to the server that sent it, arrives as the server wrote it.
        await call("evil__echo", {"text": str(link.uri)})
    assert recorded(tmp_path / "evil.jsonl")[-1] == {
        "text": f"https://bucket.example/report.csv?X-Amz-Credential={AWS_KEY}&sig=1"
    }


@PATHS
async def test_a_handle_goes_only_to_the_server_whose_output_held_it(path: str, tmp_path: Path) -> None:
    async with proxied(path, tmp_path, servers(tmp_path)) as call:
        with pytest.raises(MCPError) as failed:
            await call("evil__error", {"code": -32603})
        match = HANDLE.search(failed.value.message)
        assert match is not None
        handle = match.group(0)
        refused = await call("other__echo", {"text": f"key {handle}"})
        assert refused.is_error
        said = wire(refused)
        assert '"share_with"' in said.replace('\\"', '"')
        assert AWS_KEY not in said
        assert recorded(tmp_path / "other.jsonl") == []  # nothing was sent
        accepted = await call("evil__echo", {"text": f"key {handle}"})  # back to its own server: allowed
        assert not accepted.is_error
    assert recorded(tmp_path / "evil.jsonl")[-1] == {"text": f"key {AWS_KEY}"}


@PATHS
async def test_share_with_lets_a_servers_handles_go_to_the_servers_it_names(path: str, tmp_path: Path) -> None:
    async with proxied(path, tmp_path, servers(tmp_path, share_with=["other"])) as call:
        with pytest.raises(MCPError) as failed:
            await call("evil__error", {"code": -32603})
        match = HANDLE.search(failed.value.message)
        assert match is not None
        sent = await call("other__echo", {"text": f"key {match.group(0)}"})
    assert not sent.is_error
    assert recorded(tmp_path / "other.jsonl")[-1] == {"tool": "echo", "arguments": {"text": f"key {AWS_KEY}"}}


@PATHS
async def test_content_blocks_of_no_mcp_shape_become_a_clear_error(path: str, tmp_path: Path) -> None:
    async with proxied(path, tmp_path, servers(tmp_path)) as call:
        answer = await call("evil__weird", {})
    assert answer.is_error
    said = answer.content[0]
    assert isinstance(said, mt.TextContent)
    assert said.text.startswith("evil.weird answered with a malformed tool result (content.0")


@PATHS
async def test_secrets_allow_lets_one_kind_through_and_keeps_the_others_as_handles(path: str, tmp_path: Path) -> None:
    config = servers(tmp_path, secrets_allow=["aws-access-key"])
    async with proxied(path, tmp_path, config) as call:
        echoed = await call("evil__echo", {"text": f"id {AWS_KEY} token {GITHUB_TOKEN}"})
    block = echoed.content[0]
    assert isinstance(block, mt.TextContent)
    assert AWS_KEY in block.text  # the kind this server may show
    assert GITHUB_TOKEN not in wire(echoed)
    assert [m.group(0).split()[-1] for m in HANDLE.finditer(block.text)] == ["github-token⟧"]


def test_secrets_allow_names_only_kinds_the_detector_knows() -> None:
    from offprompt.config import parse_config

    loaded = parse_config({"mcpServers": {"x": {"command": "x", "tools": {"t": {"secrets_allow": ["pasword"]}}}}})
    assert "x" in loaded.problems
    assert "secrets_allow" in loaded.problems["x"]
    assert "unknown kind of secret 'pasword'" in loaded.problems["x"]


async def test_the_sdk_path_answers_a_clear_error_for_results_deeper_than_it_can_serialize(tmp_path: Path) -> None:
    async with proxied("sdk", tmp_path, servers(tmp_path)) as call:
        answer = await call("evil__deep", {"levels": 450})
        after = await call("evil__echo", {"text": "still there"})
    assert answer.is_error
    said = answer.content[0]
    assert isinstance(said, mt.TextContent)
    assert "nested more than 200 levels deep" in said.text
    assert "RecursionError" not in said.text
    assert not after.is_error


@pytest.mark.parametrize("levels", [450, 1000])
def test_the_fast_lane_relays_and_redacts_json_nested_a_thousand_levels(tmp_path: Path, levels: int) -> None:
    """The fast lane's documented limit is 1,024 levels: a result that deep is relayed with its token made a
    handle, and arguments that deep with a handle in them are refused by name, never with a RecursionError."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # this test's own json.dumps of them
    config = tmp_path / "offprompt.json"
    # Inline, not stored: a stored result goes through the SDK's models, which stop near 255 levels.
    config.write_text(json.dumps({**servers(tmp_path), "offprompt": {"threshold_tokens": 100_000}}))
    served = served_over_pipes(config, tmp_path / "data")
    assert served.stdin is not None
    assert served.stdout is not None

    def ask(request_id: int, method: str, params: dict[str, Any]) -> Any:
        assert served.stdin is not None
        assert served.stdout is not None
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})  # orjson: 255
        served.stdin.write(line.encode() + b"\n")
        served.stdin.flush()
        while True:
            message = orjson.loads(served.stdout.readline())
            if message.get("id") == request_id:
                return message

    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        ask(1, "initialize", init)
        served.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        deep = ask(2, "tools/call", {"name": "evil__deep", "arguments": {"levels": levels}})
        arguments: Any = "⟦secret:zzzzzzzzzz token⟧"
        for _ in range(levels):
            arguments = [arguments]
        refused = ask(3, "tools/call", {"name": "evil__echo", "arguments": {"text": "x", "more": arguments}})
    finally:
        served.kill()
        served.wait()
    assert "structuredContent" in deep.get("result", {}), str(deep)[:600]
    leaf = deep["result"]["structuredContent"]
    for _ in range(levels):
        leaf = leaf["a"]
    assert HANDLE.fullmatch(leaf["api_token"]) is not None, leaf  # redacted 1,000 levels down
    said = refused["result"]["content"][0]["text"]
    assert refused["result"]["isError"] is True
    assert "⟦secret:zzzzzzzzzz token⟧ is not a secret handle this caller received" in said
