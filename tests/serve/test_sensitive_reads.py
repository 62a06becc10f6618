"""An `always` server's outputs are read only by a call that names them: a memory_query or memory_grep across the
memory leaves them out and says so, over stdio and over HTTP (a real `offprompt serve`, real downstreams)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from mcp import ClientSession

from ..serving import offprompt_serving
from ..support import REPO
from .test_fastlane import offprompt as stdio_offprompt
from .test_transports import session_for

pytestmark = pytest.mark.anyio

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
CONFIG = {
    "offprompt": {"threshold_tokens": 5},
    "mcpServers": {
        "vault": {"command": sys.executable, "args": [COUNTER], "off_prompt": "always"},
        "notes": {"command": sys.executable, "args": [COUNTER]},
    },
}
SENSITIVE = "payload canary: the vault's root token rotation schedule"
PLAIN = "payload of the release notes: the canary build ships on friday with the new schedule"


@asynccontextmanager
async def over_http(tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[ClientSession]:
    (tmp_path / "offprompt.json").write_text(json.dumps(config))
    args = ("--config", str(tmp_path / "offprompt.json"), "--transport", "http")
    with offprompt_serving(tmp_path / "data", *args) as served:
        async with session_for(served.url) as client:
            yield client


TRANSPORTS: dict[str, Callable[[Path, dict[str, Any]], AbstractAsyncContextManager[ClientSession]]] = {
    "stdio": stdio_offprompt,
    "http": over_http,
}


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


def namespace_of(result: mt.CallToolResult) -> str:
    assert result.meta is not None
    return str(result.meta["offprompt"]["artifact_namespace"])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_always_output_is_read_only_by_a_call_that_names_it(tmp_path: Path, transport: str) -> None:
    async with TRANSPORTS[transport](tmp_path, CONFIG) as client:
        secret = namespace_of(await client.call_tool("vault__echo", {"text": SENSITIVE}))
        plain = namespace_of(await client.call_tool("notes__echo", {"text": PLAIN}))

        query = await client.call_tool("memory_query", {"query": "payload canary"})
        assert "vault's root token" not in text_of(query)
        assert query.meta is not None
        assert {r["artifact_namespace"] for r in query.meta["offprompt"]["results"]} == {plain}
        assert f"Left out 1 sensitive output (of an always-stored tool: {secret})" in text_of(query)
        assert "artifact_namespace is named" in text_of(query)
        assert query.meta["offprompt"]["sensitive_left_out"] == 1

        grep = await client.call_tool("memory_grep", {"pattern": "canary"})
        assert "vault's root token" not in text_of(grep)
        assert grep.meta is not None
        assert [m["artifact_namespace"] for m in grep.meta["offprompt"]["matches"]] == [plain]
        assert "1 sensitive output" in text_of(grep)

        named = await client.call_tool("memory_query", {"query": "payload canary", "artifact_namespace": secret})
        assert "vault's root token" in text_of(named)
        named_grep = await client.call_tool("memory_grep", {"pattern": "canary", "artifact_namespace": secret})
        assert "vault's root token" in text_of(named_grep)
        assert "sensitive output" not in text_of(named_grep)
