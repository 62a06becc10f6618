"""The one result boundary: what the client gets from a downstream's answer, on every path."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from .support import REPO, offprompt_command, subprocess_env, text_of

pytestmark = pytest.mark.anyio

MALFORMED = str(REPO / "tests" / "servers" / "malformed.py")
SECRET = "SECRET-7f3k9q2m"  # what tests/servers/malformed.py puts in its malformed result and its noise
CONFIG = {"mcpServers": {"vault": {"command": sys.executable, "args": [MALFORMED], "off_prompt": "always"}}}


def everything(result: object) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True))  # type: ignore[attr-defined]


async def test_a_sensitive_malformed_result_leaks_neither_into_the_answer_nor_the_log(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    config = parse_config(CONFIG)
    caplog.set_level(logging.DEBUG)
    proxy = Proxy(config.servers)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        result = await client.call_tool("vault__reveal", {})
    assert result.is_error
    assert "malformed" in text_of(result)
    assert SECRET not in everything(result)
    assert SECRET not in caplog.text


async def test_a_sensitive_malformed_result_does_not_leak_on_the_fast_lane(tmp_path: Path) -> None:
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps(CONFIG))
    errlog = tmp_path / "stderr.log"
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    params = StdioServerParameters(command=command, args=[*args, "--log-level", "DEBUG"], env=subprocess_env())
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("vault__reveal", {})
    assert result.is_error
    assert SECRET not in everything(result)
    assert "not JSON" in errlog.read_text()  # the noise line was seen, and logged by its size
    assert SECRET not in errlog.read_text()


def test_the_sdk_transports_log_message_sizes_not_messages(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # The SDK's streamable HTTP client logs each message it receives like this (an f-string, at DEBUG).
    logging.getLogger("mcp.client.streamable_http").debug(f"SSE message: {{'result': '{SECRET}'}}")
    assert SECRET not in caplog.text
    assert "SSE message: (" in caplog.text
