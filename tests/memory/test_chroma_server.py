"""Chroma's server mode against a real `chroma run` on loopback: the token is sent, an outage degrades to words
and heals by itself, a dropped sibling takes its collection with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.commands.common import memory_settings
from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory

from ..chroma_server import ChromaServer, TokenGuard

# The group that needs `chroma run`: each test starts its own server (~2 s) and stays within this budget.
pytestmark = [pytest.mark.chroma_server, pytest.mark.timeout(120)]

TOKEN = "s3cret-Token_1"
SATURN = "Saturn's rings are made of chunks of ice and rock, a few metres across at most."


def http_memory(tmp_path: Path, url: str, token: str | None = None) -> TaskMemory:
    chroma: dict[str, str] = {"mode": "http", "url": url}
    if token is not None:
        chroma["auth_token"] = token
    config = parse_config({"offprompt": {"memory_name": "team", "data_dir": str(tmp_path / "data"), "chroma": chroma}})
    return TaskMemory.open(memory_settings(config.settings))


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


def test_the_auth_token_stays_out_of_reprs(tmp_path: Path) -> None:
    chroma = {"mode": "http", "url": "http://127.0.0.1:9", "auth_token": TOKEN}
    config = parse_config({"offprompt": {"data_dir": str(tmp_path), "chroma": chroma}})
    assert TOKEN not in repr(config.settings)
    assert TOKEN not in repr(memory_settings(config.settings))
