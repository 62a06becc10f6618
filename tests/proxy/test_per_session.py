"""`"per_session": true`: over HTTP, each client session gets its own downstream process, so a server's
elicitation and roots requests always reach the client they are for; the process stops with its session.

offprompt runs as a subprocess over streamable HTTP with server-everything behind it; two SDK clients call it at
once, each answering with its own name.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import ClientSession
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from ..serving import needs_peers, offprompt_serving
from ..support import node_peer

pytestmark = [pytest.mark.anyio, *needs_peers]

ELICIT = "everything__trigger-elicitation-request"
ROOTS = "everything__get-roots-list"


def everything_processes(pid: int) -> int:
    """How many server-everything processes the offprompt process `pid` has running as its children."""
    children: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children += (task / "children").read_text().split()
        except (ProcessLookupError, FileNotFoundError):  # a thread that ended while we looked
            continue
    count = 0
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:  # it ended while we looked
            continue
        count += b"server-everything" in command
    return count


async def until(pid: int, expected: int) -> None:
    with anyio.fail_after(30):  # a hang guard: processes start and stop in well under a second
        while everything_processes(pid) != expected:  # noqa: ASYNC110 (no event tells a process ended)
            await anyio.sleep(0.1)


class Answers:
    """What the two clients answer; each elicitation waits until both clients were asked, so they overlap."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.both_asked = anyio.Event()

    def elicitation(self, name: str) -> Any:
        async def elicit(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
            self.asked.append(name)
            if len(self.asked) == 2:
                self.both_asked.set()
            with anyio.fail_after(30):
                await self.both_asked.wait()
            return mt.ElicitResult(action="accept", content={"name": name, "check": True, "email": f"{name}@x.org"})

        return elicit


def roots_of(name: str) -> Any:
    async def roots(context: ClientRequestContext) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri=f"file:///work/{name}", name=name)])

    return roots


@asynccontextmanager
async def client(url: str, name: str, answers: Answers, *, end: bool = True) -> AsyncIterator[ClientSession]:
    """An SDK client over streamable HTTP; `end=False` leaves without ending its session (a client that died)."""
    async with (
        streamable_http_client(url, terminate_on_close=end) as (read, write),
        ClientSession(
            read, write, elicitation_callback=answers.elicitation(name), list_roots_callback=roots_of(name)
        ) as session,
    ):
        await session.initialize()
        yield session


def text(result: mt.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


def config(tmp_path: Path, **options: Any) -> Path:
    everything = {**node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio"), **options}
    path = tmp_path / "offprompt.json"
    path.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    return path


async def test_two_http_clients_each_get_their_own_elicitation_and_roots(tmp_path: Path) -> None:
    answers = Answers()
    got: dict[str, str] = {}
    path = config(tmp_path, per_session=True)
    with offprompt_serving(tmp_path / "data", "--config", str(path), "--transport", "http") as served:
        pid = served.process.pid

        async def call(session: ClientSession, name: str, tool: str) -> None:
            got[f"{name} {tool}"] = text(await session.call_tool(tool, {}))

        async with client(served.url, "alice", answers) as alice, client(served.url, "bob", answers) as bob:
            await until(pid, 1)  # the shared process, which lists the tools; no session has called yet
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, alice, "alice", ELICIT)
                tg.start_soon(call, bob, "bob", ELICIT)
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, alice, "alice", ROOTS)
                tg.start_soon(call, bob, "bob", ROOTS)
            assert everything_processes(pid) == 3  # one per session, besides the shared one
        await until(pid, 1)  # both sessions closed: their processes stopped

    assert sorted(answers.asked) == ["alice", "bob"]
    for me, other in (("alice", "bob"), ("bob", "alice")):
        assert f"{me}@x.org" in got[f"{me} {ELICIT}"]
        assert other not in got[f"{me} {ELICIT}"]
        assert f"file:///work/{me}" in got[f"{me} {ROOTS}"]
        assert other not in got[f"{me} {ROOTS}"]


async def test_a_session_that_expires_stops_its_process(tmp_path: Path) -> None:
    path = config(tmp_path, per_session=True)
    args = ("--config", str(path), "--transport", "http", "--session-idle-seconds", "1")
    with offprompt_serving(tmp_path / "data", *args) as served:
        async with client(served.url, "alice", Answers(), end=False) as alice:
            assert "file:///work/alice" in text(await alice.call_tool(ROOTS, {}))
            assert everything_processes(served.process.pid) == 2
        await until(served.process.pid, 1)  # gone without a DELETE, idle for a second: expired, its process stopped
