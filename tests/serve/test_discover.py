"""`mcp.Client` in its default mode probes `server/discover` before anything else: offprompt over stdio answers it
as the SDK's own server does, so the client speaks 2026-07-28 instead of falling back to the old handshake."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support import REPO, offprompt_command, subprocess_env, text_of

pytestmark = pytest.mark.anyio


async def test_a_client_in_auto_mode_discovers_offprompt_and_speaks_the_2026_protocol_over_stdio(
    tmp_path: Path,
) -> None:
    config = tmp_path / "offprompt.json"
    echo = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "gated.py"), str(tmp_path / "g")]}
    (tmp_path / "g").write_text("")
    config.write_text(json.dumps({"mcpServers": {"slow": echo}}))
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    async with Client(stdio_client(params)) as client:
        assert client.protocol_version == "2026-07-28"
        listed = await client.list_tools()  # within 3 s: the slow server's tools if it has started by then
        assert "memory_list" in {tool.name for tool in listed.tools}
        answer = await client.call_tool("slow__echo", {"text": "discovered"})  # waits for its server
        assert text_of(answer) == "discovered"
        listed = await client.list_tools()
        assert {"memory_list", "slow__echo"} <= {tool.name for tool in listed.tools}
