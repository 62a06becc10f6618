"""Lists at once: a client's `tools/list`, `prompts/list` and `resources/list` are answered from each server's
last lists while it starts.

The downstream is tests/servers/gated.py, which cannot answer anything until the test creates its gate file: a
list that names its tools while the gate is shut came from the cache, not from the server. offprompt runs as a
client starts it, `offprompt serve` over stdio, with its cache in the test's directory.
"""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as mt
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from offprompt.proxy.list_cache import CACHE_ENV
from tests.support import REPO, offprompt_command, subprocess_env, text_of

pytestmark = pytest.mark.anyio

GATED = REPO / "tests" / "servers" / "gated.py"


class Listening:
    """A client session that counts the `tools/list_changed` notifications it hears, and the prompts' ones."""

    def __init__(self) -> None:
        self.changes = 0
        self.changed = anyio.Event()
        self.prompt_changes = 0
        self.prompts_changed = anyio.Event()

    async def on_message(self, message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self.changes += 1
            self.changed.set()
        if isinstance(message, mt.PromptListChangedNotification):
            self.prompt_changes += 1
            self.prompts_changed.set()

    async def next_change(self) -> None:
        with anyio.fail_after(60):  # bounds a hang: the change is announced when the server has started
            await self.changed.wait()
        self.changed = anyio.Event()


@asynccontextmanager
async def serving(tmp_path: Path, gate: Path) -> AsyncIterator[tuple[ClientSession, Listening]]:
    config = tmp_path / "offprompt.json"
    servers = {"slow": {"command": sys.executable, "args": [str(GATED), str(gate)]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    env = subprocess_env(**{CACHE_ENV: str(tmp_path / "cache")})
    listening = Listening()
    with (tmp_path / "stderr.log").open("a") as err:
        async with (
            stdio_client(StdioServerParameters(command=command, args=args, env=env), errlog=err) as (read, write),
            ClientSession(read, write, message_handler=listening.on_message) as session,
        ):
            await session.initialize()
            yield session, listening


def names(listed: mt.ListToolsResult) -> set[str]:
    return {tool.name for tool in listed.tools if tool.name.startswith("slow__")}


async def test_a_slow_servers_tools_are_listed_at_once_from_its_last_list(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # First start, nothing cached: the list is answered without the server, and its tools are announced later.
    async with serving(tmp_path, gate) as (session, listening):
        assert names(await session.list_tools()) == set()
        gate.write_text("")
        await listening.next_change()
        assert names(await session.list_tools()) == {"slow__echo"}
    cached = list((tmp_path / "cache" / "lists").glob("*.json"))
    assert len(cached) == 1
    assert stat.S_IMODE(cached[0].stat().st_mode) == 0o600

    # Second start, the gate shut again: the whole list comes at once, and a call waits for the server.
    gate.unlink()
    async with serving(tmp_path, gate) as (session, listening):
        assert names(await session.list_tools()) == {"slow__echo"}
        assert not gate.exists()  # so the server had not started: that list was the cached one
        async with anyio.create_task_group() as tg:
            answers: list[mt.CallToolResult] = []

            async def call() -> None:
                answers.append(await session.call_tool("slow__echo", {"text": "waited"}))

            tg.start_soon(call)
            await anyio.sleep(0.2)
            assert answers == []  # the call waits for its server
            gate.write_text("")
        assert text_of(answers[0]) == "waited"
        assert listening.changes == 0  # the live list is the cached one: nothing to announce


async def test_a_server_whose_live_list_differs_from_the_cached_one_is_announced(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.write_text("extra")
    async with serving(tmp_path, gate) as (session, listening):
        with anyio.fail_after(60):
            while names(await session.list_tools()) != {"slow__echo", "slow__extra"}:
                await listening.next_change()
    gate.unlink()
    async with serving(tmp_path, gate) as (session, listening):
        assert names(await session.list_tools()) == {"slow__echo", "slow__extra"}  # last time's list
        gate.write_text("")  # this time the server lists one tool fewer
        await listening.next_change()
        assert names(await session.list_tools()) == {"slow__echo"}
    said = (tmp_path / "stderr.log").read_text()
    assert 'MCP server "slow" no longer lists extra, which it listed last time' in said


def kept(name: str, tmp_path: Path) -> bool:
    return any(name in f.read_text() for f in (tmp_path / "cache" / "lists").glob("*.json"))


def prompt_names(listed: mt.ListPromptsResult) -> set[str]:
    return {prompt.name for prompt in listed.prompts if prompt.name.startswith("slow__")}


async def test_a_slow_servers_prompts_and_resources_are_listed_at_once_and_a_changed_list_is_announced(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    gate.write_text("prompt-brief")
    async with serving(tmp_path, gate) as (session, listening):
        with anyio.fail_after(60):  # the prompts are kept for the next start once the server has listed them
            while not kept("brief", tmp_path):  # noqa: ASYNC110  (a file, not an event, says it)
                await anyio.sleep(0.1)
        assert prompt_names(await session.list_prompts()) == {"slow__greeting", "slow__brief"}

    gate.unlink()
    async with serving(tmp_path, gate) as (session, listening):
        with anyio.fail_after(60):  # a hang guard: the server cannot start, so these lists are the kept ones
            prompts = prompt_names(await session.list_prompts())
            resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert not gate.exists()  # the server had not started: these lists were last time's
        assert prompts == {"slow__greeting", "slow__brief"}
        assert "gated://readme" in resources
        gate.write_text("")  # this time it has no `brief` prompt
        with anyio.fail_after(60):
            await listening.prompts_changed.wait()
        assert prompt_names(await session.list_prompts()) == {"slow__greeting"}
        got = await session.get_prompt("slow__greeting", {"name": "Ada"})
        assert "Ada" in str(got.messages[0].content)
        assert listening.changes == 0  # its tools did not change: no tools/list_changed
