"""The real MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`) against `offprompt serve`, with a
downstream server (mcp-server-time) behind it, over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ..serving import clean_env, inspector, needs_peers, offprompt_serving
from ..support import offprompt_command

pytestmark = needs_peers

TOKEN = "inspector-token-0123456789abcdef"
TIME = str(Path(sys.executable).with_name("mcp-server-time"))
MEMORY_TOOLS = {"memory_load", "memory_query", "memory_grep", "memory_list", "memory_delete"}
CALL_TIME = ("--method", "tools/call", "--tool-name", "time__get_current_time", "--tool-args-json")


def time_config(directory: Path) -> Path:
    config = directory / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": TIME, "args": ["--local-timezone", "UTC"]}}}))
    return config


def check_tools(listed: Any) -> None:
    names = {tool["name"] for tool in listed["tools"]}
    assert names >= {*MEMORY_TOOLS, "time__get_current_time", "time__convert_time"}


def check_time(called: Any) -> None:
    assert called["isError"] is False
    assert json.loads(called["content"][0]["text"])["timezone"] == "Europe/London"


def test_the_inspector_lists_and_calls_tools_over_stdio(tmp_path: Path) -> None:
    serve = offprompt_command("serve", "--data-dir", str(tmp_path / "data"), "--config", str(time_config(tmp_path)))
    stdio = ("--transport", "stdio")
    check_tools(inspector(*stdio, "--method", "tools/list", "--", *serve, home=tmp_path))
    check_time(inspector(*stdio, *CALL_TIME, '{"timezone": "Europe/London"}', "--", *serve, home=tmp_path))
    listed = inspector(*stdio, "--method", "tools/call", "--tool-name", "memory_list", "--", *serve, home=tmp_path)
    assert listed["isError"] is False


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_the_inspector_lists_and_calls_tools_over_http(tmp_path: Path, transport: str) -> None:
    args = ("--transport", transport, "--config", str(time_config(tmp_path)), "--auth-token", TOKEN)
    with offprompt_serving(tmp_path / "data", *args, env=clean_env()) as served:
        remote = ("--transport", transport, "--server-url", served.url, "--header", f"Authorization: Bearer {TOKEN}")
        check_tools(inspector(*remote, "--method", "tools/list", home=tmp_path))
        check_time(inspector(*remote, *CALL_TIME, '{"timezone": "Europe/London"}', home=tmp_path))
