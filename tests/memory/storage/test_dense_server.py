"""Chroma's server mode against a real `chroma run` on loopback: the token is sent, an outage degrades to words
and heals by itself, a dropped sibling takes its collection with it."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact
from offprompt.commands.common import memory_settings
from offprompt.config import parse_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.siblings import drop_expired_siblings, open_free, sibling
from offprompt.memory.storage import ChromaLocation
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

from ...chroma_server import ChromaServer, TokenGuard
from ...support import meta, text_of

# The group that needs `chroma run`: each test starts its own server (~2 s) and stays within this budget.
pytestmark = [pytest.mark.chroma_server, pytest.mark.timeout(120)]

TOKEN = "s3cret-Token_1"
SATURN = "Saturn's rings are made of chunks of ice and rock, a few metres across at most."
VIOLIN = "The violin has four strings, tuned in perfect fifths: G3, D4, A4 and E5. It is played with a bow."


def memory_settings_of(tmp_path: Path, url: str, token: str | None = None) -> MemorySettings:
    """The settings a config file with this `chroma` block gives."""
    chroma: dict[str, str] = {"mode": "http", "url": url}
    if token is not None:
        chroma["auth_token"] = token
    config = parse_config({"offprompt": {"memory_name": "team", "data_dir": str(tmp_path / "data"), "chroma": chroma}})
    return memory_settings(config.settings)


def http_memory(tmp_path: Path, url: str, token: str | None = None) -> TaskMemory:
    return TaskMemory.open(memory_settings_of(tmp_path, url, token))


def test_the_configured_auth_token_reaches_the_chroma_server(tmp_path: Path, chroma_server: ChromaServer) -> None:
    with TokenGuard(chroma_server.port, TOKEN).running() as guard:
        memory = http_memory(tmp_path, guard.url, TOKEN)
        try:
            ref = memory.store([TextArtifact(value=SATURN)], tool="space.facts")
            assert memory.text.wait_indexed(timeout=60)  # type: ignore[attr-defined]
            hits, indexing = memory.query("what are planetary rings made of", mode="dense")
        finally:
            memory.close()
    assert [h.namespace for h in hits] == [ref.namespace]
    assert indexing == []
    assert guard.seen, "nothing reached the Chroma server"
    assert all(h.get("authorization") == f"Bearer {TOKEN}" for h in guard.seen)
    assert all(h.get("x-chroma-token") == TOKEN for h in guard.seen)


@pytest.mark.anyio
async def test_a_token_the_chroma_server_refuses_is_named_as_the_fix_and_not_retried_as_an_outage(
    tmp_path: Path, chroma_server: ChromaServer, caplog: pytest.LogCaptureFixture
) -> None:
    with TokenGuard(chroma_server.port, TOKEN).running() as guard:
        memory = http_memory(tmp_path, guard.url, "a-wrong-token")
        try:
            async with Client(build_server(memory)) as client:
                ns = memory.store([TextArtifact(value=SATURN)], tool="space.facts").namespace
                assert await anyio.to_thread.run_sync(wait_indexed, memory)
                for mode in ("hybrid", "dense"):
                    text, found = await query(client, query="Saturn rings ice", mode=mode)
                    assert [r["artifact_namespace"] for r in found["results"]] == [ns]  # by its words meanwhile
                    assert '"auth_token" in "chroma"' in found["by_words"]
                    assert "refused the token configured" in text
                    assert "Try again later" not in text  # it is not an outage
        finally:
            memory.close()
    assert not [r for r in caplog.records if r.exc_info], "a refused token is said in one line, no traceback"
    assert any("auth_token" in r.getMessage() for r in caplog.records)  # the embedder said why it stopped


def test_the_auth_token_stays_out_of_reprs(tmp_path: Path) -> None:
    chroma = {"mode": "http", "url": "http://127.0.0.1:9", "auth_token": TOKEN}
    config = parse_config({"offprompt": {"data_dir": str(tmp_path), "chroma": chroma}})
    assert TOKEN not in repr(config.settings)
    assert TOKEN not in repr(memory_settings(config.settings))


async def query(client: Client, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool("memory_query", arguments)
    assert not result.is_error, text_of(result)
    return text_of(result), meta(result)


def wait_indexed(memory: TaskMemory) -> bool:
    return bool(memory.text.wait_indexed(timeout=90))  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_with_chroma_down_queries_answer_by_words_and_texts_are_embedded_when_it_is_back(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    memory = http_memory(tmp_path, chroma_server.url)
    try:
        async with Client(build_server(memory)) as client:
            saturn = memory.store([TextArtifact(value=SATURN)], tool="space.facts").namespace
            assert await anyio.to_thread.run_sync(wait_indexed, memory)

            chroma_server.stop()
            for mode in ("hybrid", "dense"):
                text, found = await query(client, query="Saturn rings ice", mode=mode)
                assert "ranked by their words only" in text
                assert found["by_words"]
                assert [r["artifact_namespace"] for r in found["results"]] == [saturn]

            deleted = await client.call_tool("memory_delete", {"artifact_namespace": saturn})
            assert not deleted.is_error, text_of(deleted)  # the text goes now, its vectors when Chroma is back
            violin = memory.store([TextArtifact(value=VIOLIN)], tool="music.facts").namespace
            assert await anyio.to_thread.run_sync(lambda: memory.text.wait_chunked([violin], 60))  # type: ignore[attr-defined]
            text, found = await query(client, query="violin strings", mode="dense")
            assert [r["artifact_namespace"] for r in found["results"]] == [violin]  # by its words
            assert found["indexing"] == [violin]  # and not claimed searchable by meaning
            assert "Still indexing" in text

            chroma_server.start()  # the same server and data, back: no restart of offprompt
            assert await anyio.to_thread.run_sync(wait_indexed, memory)
            text, found = await query(client, query="a bowed instrument tuned in fifths", mode="dense")
            assert "by_words" not in found
            assert found["indexing"] == []
            assert found["results"][0]["artifact_namespace"] == violin
            collection = ChromaLocation("http", url=chroma_server.url).http_client().get_collection("offprompt-team")
            assert collection.get(where={"namespace": saturn})["ids"] == []
            assert collection.get(where={"namespace": violin})["ids"] != []
    finally:
        memory.close()


def test_an_expired_sibling_takes_its_collection_on_the_chroma_server_with_it(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    held = http_memory(tmp_path, chroma_server.url)  # "team" is in use: the next server takes "team-2"
    settings = replace(memory_settings_of(tmp_path, chroma_server.url), ttl_seconds=3600)
    try:
        second = open_free(settings, wait=0)
        assert second.name == "team-2"
        second.store([TextArtifact(value=SATURN)], tool="space.facts")
        assert wait_indexed(second)
        second.close()
        server = ChromaLocation("http", url=chroma_server.url).http_client()
        assert "offprompt-team-2" in [c.name for c in server.list_collections()]
        long_ago = time.time() - 2 * 3600
        for path in sibling(settings, 2).directory.glob("catalog.sqlite3*"):
            os.utime(path, (long_ago, long_ago))

        chroma_server.stop()  # its vectors can't be dropped now: the sibling stays for a later try
        assert drop_expired_siblings(settings, own="team") == []
        assert sibling(settings, 2).directory.is_dir()

        chroma_server.start()
        assert drop_expired_siblings(settings, own="team") == ["team-2"]
        assert not sibling(settings, 2).directory.exists()
        assert "offprompt-team-2" not in [c.name for c in server.list_collections()]
    finally:
        held.close()
