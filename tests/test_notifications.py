"""What a downstream says beside its results reaches the client as a result would: secrets as handles, nothing
of a sensitive server's, `_meta` keys of offprompt's own never taken from it, and only to the client whose call
it belongs to.

The downstream is tests/servers/chatty.py (raw JSON-RPC: logs, progress, resource updates, lists holding keys,
one tool listed three times). Each test runs on the paths it applies to: the SDK path (in process, a 2025-11-25
client), the stdio fast lane (a served subprocess) and streamable HTTP with two bearer tokens.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from offprompt.config import parse_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.notifications import NotificationBoundary
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.list_cache import ListCache
from offprompt.proxy.notification import Notification
from offprompt.secrets import HANDLE, Redactor
from offprompt.serve.app import build_server
from tests.serve.test_transports import ALICE, BOB, local_url
from tests.serving import clean_env, offprompt_serving
from tests.support import REPO, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio

CHATTY = REPO / "tests" / "servers" / "chatty.py"
AWS_KEY = "AKIAQX7Z3N5B2LMRTW4E"
GITHUB_TOKEN = "ghp_" + "Zq7sKc2Vw9LmXb4Tn8Rd1Hf6Jy3Pg5Ae0Ui2"
KEYS = (AWS_KEY, GITHUB_TOKEN)
WAIT = 60  # a bound on waiting for a state, never a figure the test checks


def config(**loud: Any) -> dict[str, Any]:
    return {"mcpServers": {"loud": {"command": sys.executable, "args": [str(CHATTY)], **loud}}}


@dataclass
class Heard:
    """What one client heard besides its answers: log messages, progress messages, resource updates."""

    logs: list[str] = field(default_factory=list)
    progress: list[str | None] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    _news: anyio.Event = field(default_factory=anyio.Event)

    def _told(self) -> None:
        self._news.set()
        self._news = anyio.Event()

    async def on_log(self, params: mt.LoggingMessageNotificationParams) -> None:
        self.logs.append(json.dumps(params.model_dump(mode="json", by_alias=True), ensure_ascii=False))
        self._told()

    async def on_message(self, message: object) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.updates.append(str(message.params.uri))
            self._told()

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(message)
        self._told()

    async def until(self, holds: Callable[[], bool]) -> None:
        try:
            with anyio.fail_after(WAIT):
                while not holds():
                    await self._news.wait()
        except TimeoutError:
            raise AssertionError(f"heard only {self.everything()}") from None

    def everything(self) -> str:
        return json.dumps([self.logs, self.progress, self.updates], ensure_ascii=False)


@dataclass
class Clients:
    """A way into offprompt: `open(token)` gives a client session and what it heard; `stderr()` what offprompt
    said on stderr (in process: its log records)."""

    open: Callable[[str | None], Any]
    stderr: Callable[[], str]


@asynccontextmanager
async def offprompt(
    path: str, tmp_path: Path, cfg: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> AsyncIterator[Clients]:
    """offprompt in front of `cfg`'s servers over `path`: "sdk" (in process), "fast_lane" (a served stdio
    subprocess) or "http" (a served subprocess taking ALICE's and BOB's tokens)."""
    if path == "sdk":
        loaded = parse_config(cfg)
        memory = TaskMemory.open(MemorySettings(name="test", data_dir=tmp_path / "data"))
        proxy = Proxy(loaded.servers, cache=ListCache(tmp_path / "cache" / "lists"))
        server = build_server(memory, proxy, loaded.settings)

        @asynccontextmanager
        async def in_process(token: str | None) -> AsyncIterator[tuple[Any, Heard]]:
            heard = Heard()
            async with Client(
                server, mode="legacy", logging_callback=heard.on_log, message_handler=heard.on_message
            ) as client:
                yield client, heard

        try:
            async with proxy.running():
                yield Clients(in_process, lambda: caplog.text)
        finally:
            memory.close()
        return
    if path == "fast_lane":
        (tmp_path / "offprompt.json").write_text(json.dumps(cfg))
        command, *args = offprompt_command(
            "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
        )
        env = subprocess_env(OFFPROMPT_CACHE_DIR=str(tmp_path / "cache"))
        params = StdioServerParameters(command=command, args=args, env=env)
        errors = tmp_path / "stderr.log"

        @asynccontextmanager
        async def over_stdio(token: str | None) -> AsyncIterator[tuple[Any, Heard]]:
            heard = Heard()
            with errors.open("w") as err:
                async with (
                    stdio_client(params, errlog=err) as (read, write),
                    ClientSession(read, write, logging_callback=heard.on_log, message_handler=heard.on_message) as s,
                ):
                    await s.initialize()  # 2025-11-25: proxied calls take the fast lane
                    yield s, heard

        yield Clients(over_stdio, errors.read_text)
        return
    (tmp_path / "offprompt.json").write_text(json.dumps(cfg))
    env = clean_env(OFFPROMPT_AUTH_TOKEN=f"{ALICE},{BOB}", OFFPROMPT_CACHE_DIR=str(tmp_path / "cache"))
    args = ("--config", str(tmp_path / "offprompt.json"), "--transport", "http")
    with offprompt_serving(tmp_path / "data", *args, env=env) as served:

        @asynccontextmanager
        async def over_http(token: str | None) -> AsyncIterator[tuple[Any, Heard]]:
            heard = Heard()
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                streamable_http_client(local_url(served), http_client=http) as (read, write),
                ClientSession(read, write, logging_callback=heard.on_log, message_handler=heard.on_message) as s,
            ):
                await s.initialize()
                yield s, heard

        yield Clients(over_http, served.stderr)


PATHS = pytest.mark.parametrize("path", ["sdk", "fast_lane", "http"])


@contextmanager
def _deprecated_here() -> Iterator[None]:
    """Subscriptions and logging levels are deprecated at 2026-07-28 and current for the 2025-era clients here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


async def said(clients: Clients, text: str) -> None:
    """Until offprompt has said `text` on stderr."""
    with anyio.fail_after(WAIT):
        while text not in clients.stderr():  # noqa: ASYNC110 - a subprocess's stderr has no event
            await anyio.sleep(0.05)


@PATHS
async def test_a_downstreams_log_progress_and_updates_reach_the_client_with_handles(
    path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with offprompt(path, tmp_path, config(), caplog) as clients, clients.open(ALICE) as (client, heard):
        await client.list_tools()
        report = next(r for r in (await client.list_resources()).resources if "report" in r.name)
        with _deprecated_here():  # for 2026-07-28 clients; current for 2025-era ones
            await client.subscribe_resource(report.uri)
        result = await client.call_tool("loud__chatty", {"tag": "alice"}, progress_callback=heard.on_progress)
        await heard.until(lambda: bool(heard.logs and heard.updates and heard.progress))
    assert "alice connecting with" in heard.logs[0]
    assert '"logger": "loud.db"' in heard.logs[0]  # its logger named by its server, as before
    assert HANDLE.search(heard.logs[0]) is not None
    assert heard.progress[0] is not None
    assert heard.progress[0].startswith("alice uploading with ⟦secret:")
    assert heard.updates == [str(report.uri)]  # the URI the client listed and subscribed to
    for key in KEYS:
        assert key not in heard.everything()
    assert not result.is_error
    assert "offprompt" not in (result.meta or {})  # offprompt's own key, forged by the downstream: not taken
    assert "made-by-the-server" not in json.dumps(result.model_dump(mode="json", by_alias=True))


@PATHS
@pytest.mark.parametrize("sensitive", ["server", "tool"])
async def test_an_always_servers_log_and_progress_words_never_reach_the_client(
    path: str, sensitive: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    always = {"off_prompt": "always"}
    cfg = config(**always) if sensitive == "server" else config(tools={"chatty": always})
    async with offprompt(path, tmp_path, cfg, caplog) as clients, clients.open(ALICE) as (client, heard):
        await client.list_tools()
        result = await client.call_tool("loud__chatty", {"tag": "alice"}, progress_callback=heard.on_progress)
        await said(clients, 'a log message of "loud" (level warning,')
        assert "alice" not in clients.stderr()  # its level and size only
        assert heard.logs == []
        assert all(message is None for message in heard.progress)  # how far it is, not what it says
    assert "stored in memory" in json.dumps(result.model_dump(mode="json", by_alias=True))


async def test_a_log_goes_only_to_the_token_whose_call_it_belongs_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The server takes a second to take a log level and says its "later" line first: the level is in effect, and
    # what the server said meanwhile told, when the client's request is answered. Before: offprompt answered at
    # once, Bob's call went in flight, and the line Alice's call had left (her key's handle) reached Bob.
    slow_level = config(env={"CHATTY_LEVEL_DELAY": "1"})
    async with (
        offprompt("http", tmp_path, slow_level, caplog) as clients,
        clients.open(ALICE) as (alice, alice_heard),
        clients.open(BOB) as (bob, bob_heard),
    ):
        await alice.list_tools()
        await bob.list_tools()  # both are clients offprompt knows to tell things
        await alice.call_tool("loud__chatty", {"tag": "alice"})
        await alice_heard.until(lambda: any("alice connecting" in log for log in alice_heard.logs))
        await alice.call_tool("loud__later", {"tag": "between"})
        with _deprecated_here():
            await alice.set_logging_level("info")  # the server says its "later" line now, with no call in flight
        await bob.call_tool("loud__chatty", {"tag": "bob"})
        await bob_heard.until(lambda: any("bob connecting" in log for log in bob_heard.logs))
    assert not any("alice" in log or "between" in log for log in bob_heard.logs)
    assert not any("bob" in log for log in alice_heard.logs)


async def test_the_fast_lane_gives_progress_the_clients_own_token_and_takes_no_meta_of_offprompts(
    tmp_path: Path,
) -> None:
    (tmp_path / "offprompt.json").write_text(json.dumps(config()))
    command = offprompt_command(
        "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
    )
    env = subprocess_env(OFFPROMPT_CACHE_DIR=str(tmp_path / "cache"))
    with anyio.fail_after(WAIT):
        async with await anyio.open_process(command, env=env, stderr=None) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            lines = _Lines(process.stdout)
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            }
            await _send(process.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
            await lines.answer(1)
            await _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"name": "loud__chatty", "arguments": {"tag": "raw"}, "_meta": {"progressToken": "client-7"}}
            await _send(process.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            answer = await lines.answer(2)
            await process.stdin.aclose()
    progress = [m["params"] for m in lines.seen if m.get("method") == "notifications/progress"]
    assert [p["progressToken"] for p in progress] == ["client-7"]
    assert "offprompt" not in progress[0].get("_meta", {})
    assert "made-by-the-server" not in json.dumps(progress)
    assert AWS_KEY not in json.dumps(progress)
    assert "offprompt" not in answer["result"].get("_meta", {})
    assert "made-by-the-server" not in json.dumps(answer)


class _Lines:
    """The messages a subprocess writes on stdout, one JSON line each."""

    def __init__(self, stdout: Any) -> None:
        self._stdout = stdout
        self._buffer = b""
        self.seen: list[dict[str, Any]] = []

    async def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            while b"\n" not in self._buffer:
                self._buffer += await self._stdout.receive()
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            self.seen.append(message)
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]


async def _send(stdin: Any, message: dict[str, Any]) -> None:
    await stdin.send(json.dumps(message).encode() + b"\n")


# -- lists ---------------------------------------------------------------------------------------------------------


def _cached_texts(directory: Path) -> str:
    return "".join(p.read_text() for p in directory.rglob("*.json")) if directory.exists() else ""


@PATHS
async def test_lists_reach_the_client_and_the_start_up_caches_with_handles(
    path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with offprompt(path, tmp_path, config(), caplog) as clients, clients.open(ALICE) as (client, _):
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
        report = next(r for r in resources if "report" in r.name)
        read = (await client.read_resource(report.uri)).contents[0]
        listed = json.dumps(
            [[x.model_dump(mode="json") for x in items] for items in (tools, resources, templates, prompts)]
        )
        # The cached lists are written as the server's lists are taken (the front answer when tools/list is
        # answered): wait for the resources to be among them.
        with anyio.fail_after(WAIT):
            while "report for" not in _cached_texts(tmp_path / "cache"):  # noqa: ASYNC110 - files have no event
                await anyio.sleep(0.05)
    for key in KEYS:
        assert key not in listed
        assert key not in _cached_texts(tmp_path / "cache")
    assert HANDLE.search(next(t.description or "" for t in tools if t.name == "loud__chatty")) is not None
    assert isinstance(read, mt.TextResourceContents)
    assert read.text == "the report"  # the listed URI still reads
    if path == "fast_lane":
        assert list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("path", ["sdk", "fast_lane"])
async def test_a_tool_listed_three_times_is_listed_under_three_names(
    path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with offprompt(path, tmp_path, config(), caplog) as clients, clients.open(None) as (client, _):
        names = [t.name for t in (await client.list_tools()).tools]
        called = await client.call_tool("loud__dup__2", {"tag": "x"})
        await said(clients, '"loud" lists tool "dup" 3 times')
    assert len(names) == len(set(names))
    assert [n for n in names if n.startswith("loud__dup")] == ["loud__dup", "loud__dup__2", "loud__dup__3"]
    assert not called.is_error
    assert "dup x" in json.dumps(called.model_dump(mode="json"))


def test_check_says_a_tool_is_listed_more_than_once(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "offprompt.json").write_text(json.dumps(config()))
    done = subprocess.run(
        offprompt_command("check", "--config", str(tmp_path / "offprompt.json")),
        capture_output=True,
        text=True,
        env={**subprocess_env(), "OFFPROMPT_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )
    assert 'lists tool "dup" 3 times' in done.stdout + done.stderr


# -- the boundary itself -------------------------------------------------------------------------------------------


async def test_a_downstreams_cancellation_of_its_own_request_is_no_clients_business() -> None:
    boundary = NotificationBoundary(Redactor(None))
    cancelled = Notification("loud", "notifications/cancelled", {"requestId": 1, "reason": "gave up"})
    assert await boundary.params_for(cancelled, "") is None  # its id is not one of the client's requests


async def test_a_sensitive_servers_task_status_keeps_its_state_and_loses_its_words() -> None:
    boundary = NotificationBoundary(Redactor(None))
    status = {"taskId": "t1", "status": "working", "statusMessage": f"uploading with {AWS_KEY}"}
    heard = await boundary.params_for(Notification("loud", "notifications/tasks/status", status, sensitive=True), "")
    assert heard == {"taskId": "t1", "status": "working"}


async def test_a_calls_progress_reaches_its_client_in_order_and_before_the_answer() -> None:
    # Before: the SDK runs each progress callback in a task of its own; a message whose words were redacted in a
    # thread reached the client after the call's answer, where the request had ended and it was dropped (an HTTP
    # downstream's progress never reached a stdio client), or after a later message.
    boundary = NotificationBoundary(Redactor())
    heard: list[str | None] = []
    note = Notification("loud", "notifications/progress", {}, "redact", False)

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    relay = boundary.progress_to(forward, note, "")
    async with anyio.create_task_group() as tg:  # as the SDK spawns them: the first has a key to redact
        tg.start_soon(relay, 1.0, 3.0, f"first {AWS_KEY}")
        tg.start_soon(relay, 2.0, 3.0, "second")
        tg.start_soon(relay, 3.0, 3.0, None)
        await relay.settled()  # where the answer waits
        assert len(heard) == 3
    assert heard[0] is not None
    assert heard[0].startswith("first ⟦secret:")
    assert AWS_KEY not in heard[0]
    assert heard[1:] == ["second", None]
