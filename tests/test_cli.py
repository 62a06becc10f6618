"""`offprompt serve` as a client starts it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .support import offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio


async def test_serve_answers_over_stdio(tmp_path: Path) -> None:
    command, *args = offprompt_command("serve", "--data-dir", str(tmp_path), "--memory-name", "cli")
    params = StdioServerParameters(command=command, args=args, env=subprocess_env(HF_HUB_OFFLINE="1"))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "offprompt"
        tools = await session.list_tools()
        assert {t.name for t in tools.tools} == {
            "memory_load",
            "memory_query",
            "memory_grep",
            "memory_list",
            "memory_delete",
        }
        assert all(t.output_schema is None for t in tools.tools)
        listed = await session.call_tool("memory_list", {})
        assert not listed.is_error


def test_starting_does_not_load_chroma_or_the_model() -> None:
    # Clients start their servers at launch; a quick `initialize` needs the heavy parts to load on first use.
    code = (
        "import sys, offprompt.cli, offprompt.app, offprompt.memory; "
        "print(sorted(m for m in ('chromadb', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
