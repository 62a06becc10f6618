"""Three `offprompt serve` processes on one memory in PostgreSQL: what one stores the others read, grep, search
and delete, each token seeing only its own; a server killed mid-indexing has its job finished by another."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager

import anyio
import httpx2
import mcp_types as mt
import psycopg
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from offprompt.memory.storage.pg import schema_name

from ..serving import Served, clean_env, headers_serving, offprompt_serving

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
LEASE_SECONDS = 3


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, postgres_dsn: str) -> Iterator[tuple[str, list[Served]]]:
    """The memory's name and three servers on it, each with a data directory of its own; results of the one
    downstream tool (`rec__echo`) are always stored."""
    name = f"servers{os.getpid()}x{int(time.time())}"
    directory = tmp_path_factory.mktemp("shared")
    with ExitStack() as stack:
        recorder = stack.enter_context(headers_serving(directory / "headers.jsonl"))
        config = directory / "offprompt.json"
        config.write_text(
            json.dumps(
                {
                    "offprompt": {"memory_name": name, "postgres": postgres_dsn},
                    "mcpServers": {"rec": {"url": recorder.url, "off_prompt": "always"}},
                }
            )
        )
        env = clean_env(OFFPROMPT_AUTH_TOKEN=f"{ALICE},{BOB}", OFFPROMPT_JOB_LEASE_SECONDS=str(LEASE_SECONDS))
        servers = [
            stack.enter_context(
                offprompt_serving(directory / f"data{n}", "--config", str(config), "--transport", "http", env=env)
            )
            for n in range(3)
        ]
        yield name, servers


@asynccontextmanager
async def session(served: Served, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(served.url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


def namespace_of(result: mt.CallToolResult) -> str:
    assert result.meta is not None, text_of(result)
    return str(result.meta["offprompt"]["artifact_namespace"])


async def test_a_reference_from_one_server_is_read_grepped_searched_and_deleted_through_the_others(
    shared: tuple[str, list[Served]],
) -> None:
    _, (first, second, third) = shared
    report = "\n".join(f"line {n}: nothing to see" for n in range(300)) + "\nline 300: the quartzlily marmalade\n"
    async with session(first, ALICE) as alice:
        namespace = namespace_of(await alice.call_tool("rec__echo", {"text": report}))
    async with session(second, ALICE) as alice:
        assert namespace in text_of(await alice.call_tool("memory_list", {}))
        loaded = await alice.call_tool("memory_load", {"artifact_namespace": namespace, "max_tokens": 20000})
        assert loaded.content[0].text == report  # type: ignore[union-attr]
        grep = await alice.call_tool("memory_grep", {"pattern": "quartz\\w+", "artifact_namespace": namespace})
        assert [m["line"] for m in grep.meta["offprompt"]["matches"]] == [301]  # type: ignore[index]
        found = await alice.call_tool(
            "memory_query", {"query": "quartzlily marmalade", "artifact_namespace": namespace, "mode": "lexical"}
        )
        assert "quartzlily marmalade" in found.meta["offprompt"]["results"][0]["text"]  # type: ignore[index]
    async with session(third, BOB) as bob:  # another token sees none of it, on any server
        assert namespace not in text_of(await bob.call_tool("memory_list", {}))
        assert (await bob.call_tool("memory_load", {"artifact_namespace": namespace})).is_error
        assert (await bob.call_tool("memory_delete", {"artifact_namespace": namespace})).is_error
        grep = await bob.call_tool("memory_grep", {"pattern": "quartzlily"})
        assert grep.meta["offprompt"]["matches"] == []  # type: ignore[index]
    async with session(third, ALICE) as alice:
        assert not (await alice.call_tool("memory_delete", {"artifact_namespace": namespace})).is_error
    async with session(first, ALICE) as alice:
        gone = await alice.call_tool("memory_load", {"artifact_namespace": namespace})
        assert gone.is_error
        assert "memory_list" in text_of(gone)
        assert namespace not in text_of(await alice.call_tool("memory_list", {}))
        grep = await alice.call_tool("memory_grep", {"pattern": "quartzlily"})
        assert grep.meta["offprompt"]["matches"] == []  # type: ignore[index]


def _job(dsn: str, memory: str, namespace: str) -> tuple[str | None, int] | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT owner, taken FROM "{schema_name(memory)}".jobs WHERE namespace = %s', (namespace,)
        ).fetchone()
    return None if row is None else (row[0], int(row[1]))


def _pid(owner: str) -> int:
    return int(owner.split(":")[1])  # host:pid:random


async def test_a_server_killed_mid_indexing_has_its_job_finished_by_another(
    shared: tuple[str, list[Served]], postgres_dsn: str
) -> None:
    name, servers = shared
    lines = [
        f"2026-05-20 10:{n % 60:02d}:00 INFO request {n} served in {n % 17} ms" for n in range(7000)
    ]  # twice (text, structuredContent) < 1 MB
    text = "\n".join([*lines, "2026-05-20 11:00:00 ERROR the zebrafinch checksum failed"])
    async with session(servers[0], ALICE) as alice:
        namespace = namespace_of(await alice.call_tool("rec__echo", {"text": text}))

    deadline = time.monotonic() + 30
    while (job := _job(postgres_dsn, name, namespace)) is not None and job[0] is None:
        assert time.monotonic() < deadline, "no server took the indexing job"
        await anyio.sleep(0.02)
    assert job is not None, "the job was done before a server could be killed: make the text longer"
    assert job[0] is not None
    victim = next(s for s in servers if s.process.pid == _pid(job[0]))
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait(timeout=10)
    held = _job(postgres_dsn, name, namespace)
    assert held is not None, "the killed server had finished its job already: make the text longer"
    assert held[0] == job[0]

    owners = {job[0]}
    deadline = time.monotonic() + 180
    while (job := _job(postgres_dsn, name, namespace)) is not None:
        assert time.monotonic() < deadline, f"the job was not finished: {job}"
        if job[0]:
            owners.add(job[0])
        await anyio.sleep(0.05)
    survivors = [s for s in servers if s is not victim]
    assert {_pid(owner) for owner in owners} - {victim.process.pid} <= {s.process.pid for s in survivors}
    assert len(owners) >= 2  # taken over after the lease ran out

    for survivor in survivors:
        async with session(survivor, ALICE) as alice:
            found = await alice.call_tool(
                "memory_query", {"query": "zebrafinch checksum", "artifact_namespace": namespace, "mode": "lexical"}
            )
            assert "zebrafinch checksum failed" in found.meta["offprompt"]["results"][0]["text"]  # type: ignore[index]
            assert found.meta["offprompt"]["indexing"] == []  # type: ignore[index]
