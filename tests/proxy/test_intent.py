"""`intent` on proxied tools: listed on each, never forwarded, and answered in the reference of a stored result
with the passages that hold the answer; a sensitive result's reference shows neither outline nor passages."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from offprompt.artifacts import TextArtifact
from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

from ..support import DOCS, REPO, meta, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio

RECORDER = str(REPO / "tests" / "servers" / "recorder.py")
SOURCE = DOCS / "code_subprocess.py"
INTENT = "which exception is raised when the timeout expires"


def config(record: Path, **server: Any) -> dict[str, Any]:
    return {"mcpServers": {"files": {"command": sys.executable, "args": [RECORDER, str(record)], **server}}}


def recorded(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def texts(result: mt.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


@asynccontextmanager
async def proxied(memory: TaskMemory, raw: dict[str, Any]) -> AsyncIterator[Client]:
    parsed = parse_config(raw)
    proxy = Proxy(parsed.servers, intent=parsed.settings.intent)
    async with proxy.running(), Client(build_server(memory, proxy, parsed.settings)) as client:
        yield client


@asynccontextmanager
async def served(tmp_path: Path, raw: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """`offprompt serve` as a subprocess over stdio, with a 2025-era client: proxied calls take the fast lane."""
    path = tmp_path / "offprompt.json"
    path.write_text(json.dumps(raw))
    command, *args = offprompt_command("serve", "--config", str(path), "--data-dir", str(tmp_path / "data"))
    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


async def test_every_proxied_tool_takes_an_intent_that_costs_at_most_15_tokens_and_offprompt_s_own_1200(
    memory: TaskMemory, tmp_path: Path
) -> None:
    """Every request pays for tools/list: counted as the wire carries it (compact JSON, o200k_base)."""
    async with proxied(memory, config(tmp_path / "record.jsonl")) as client:
        listed = (await client.list_tools()).tools
    async with proxied(memory, {**config(tmp_path / "record.jsonl"), "offprompt": {"intent": False}}) as client:
        plain = next(t for t in (await client.list_tools()).tools if t.name == "files__read")
    read = next(t for t in listed if t.name == "files__read")
    assert read.input_schema["properties"]["intent"]["type"] == "string"
    assert "intent" not in read.input_schema["required"]
    assert "intent" not in plain.input_schema["properties"]  # the switch turns it off
    cost = count_tokens(read.model_dump_json(by_alias=True, exclude_none=True)) - count_tokens(
        plain.model_dump_json(by_alias=True, exclude_none=True)
    )
    assert 0 < cost <= 15
    own = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed if t.name.startswith("memory_")]
    assert len(own) == 7
    assert count_tokens(json.dumps(own, separators=(",", ":"))) <= 1200


async def test_intent_never_reaches_the_downstream_and_its_passages_come_with_the_reference(
    memory: TaskMemory, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    async with proxied(memory, config(record)) as client:
        result = await client.call_tool("files__read", {"path": str(SOURCE), "intent": INTENT})
    assert recorded(record) == [{"path": str(SOURCE)}]
    facts = meta(result)
    assert facts["intent"]["intent"] == INTENT
    passages = facts["intent"]["passages"]
    assert any("class TimeoutExpired" in p["text"] for p in passages)
    lines = SOURCE.read_text().splitlines()
    for p in passages:  # each passage starts at the line it names, in the stored text
        assert p["text"].splitlines()[0] == lines[p["line"] - 1]
    assert "Best passages for the intent" in texts(result)
    assert "class TimeoutExpired" in texts(result)
    assert memory.get(facts["artifact_namespace"]).arguments == {"path": str(SOURCE)}  # listed as forwarded


async def test_intent_never_reaches_the_downstream_on_the_fast_lane(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    async with served(tmp_path, config(record)) as session:
        result = await session.call_tool("files__read", {"path": str(SOURCE), "intent": INTENT})
    assert recorded(record) == [{"path": str(SOURCE)}]
    assert any("class TimeoutExpired" in p["text"] for p in meta(result)["intent"]["passages"])


async def test_a_sensitive_result_shows_no_outline_and_no_passages(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    async with served(tmp_path, config(record, off_prompt="always")) as session:
        result = await session.call_tool("files__read", {"path": str(SOURCE), "intent": INTENT})
    facts = meta(result)
    assert "outline" not in facts
    assert "intent" not in facts
    assert "TimeoutExpired" not in texts(result)
    assert "Outline" not in texts(result)
    assert recorded(record) == [{"path": str(SOURCE)}]


async def test_an_auto_result_shows_a_bounded_outline_and_carries_it_whole(memory: TaskMemory, tmp_path: Path) -> None:
    async with proxied(memory, config(tmp_path / "record.jsonl")) as client:
        result = await client.call_tool("files__read", {"path": str(SOURCE)})
        facts = meta(result)
        whole = await client.call_tool("memory_outline", {"artifact_namespace": facts["artifact_namespace"]})
    shown = next(b.text for b in result.content if isinstance(b, mt.TextContent) and b.text.startswith("Outline"))
    assert count_tokens(shown) <= 400 + 60  # the budget, plus the heading and the pointer to the rest
    assert "memory_outline" in shown  # the rest is one call away
    assert "class TimeoutExpired(SubprocessError)" in shown  # shallow entries come first
    assert facts["outline"] == meta(whole)["outline"]
    assert len(facts["outline"]) > shown.count("\n")  # the text shows part, _meta holds all
    assert "intent" not in facts  # none was given


async def test_outline_tokens_0_turns_the_outline_off(memory: TaskMemory, tmp_path: Path) -> None:
    raw = {**config(tmp_path / "record.jsonl"), "offprompt": {"outline_tokens": 0}}
    async with proxied(memory, raw) as client:
        result = await client.call_tool("files__read", {"path": str(SOURCE)})
        facts = meta(result)
        asked = await client.call_tool("memory_outline", {"artifact_namespace": facts["artifact_namespace"]})
    assert "outline" not in facts
    assert "Outline" not in texts(result)
    assert meta(asked)["outline"]  # still made, and one call away


def test_the_intent_passages_of_several_texts_come_best_first(memory: TaskMemory) -> None:
    """A result of several texts: the passages are ranked across all of them, best first."""
    noise = "".join(f"worker {i} finished; no exception was raised\n" for i in range(300))
    answer = "the TimeoutExpired exception is raised when the timeout expires before the child exits\n"
    texts = [TextArtifact(value=noise), TextArtifact(value=noise[:3000] + answer + noise[3000:])]
    reference = memory.store(texts, tool="t", intent=INTENT)
    items = [item for item, _ in reference.passages]
    assert items[0] == 1
    assert "TimeoutExpired" in reference.passages[0][1].text
    scores = [p.score for _, p in reference.passages]
    assert len(set(scores)) > 1
    assert scores == sorted(scores, reverse=True)
