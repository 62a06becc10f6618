"""Every string survives: a lone surrogate (a JSON escape like "\\udfff", or its bytes, which are no UTF-8), from a
client or from a downstream, on every path and transport, is refused as an invalid message or reaches the client
as U+FFFD; never a crash. What the client reads is always strict UTF-8 JSON."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as mt
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..servers.raw_strings import AWS_KEY
from ..serving import Served, offprompt_serving, serving
from ..support import REPO, offprompt_command

RAW_STRINGS = str(REPO / "tests" / "servers" / "raw_strings.py")
#: A hang guard, not a speed limit: far above what any answer takes.
HANG_SECONDS = 60
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
WIRES = ("escaped", "raw")


def write_config(directory: Path) -> Path:
    """Two raw-strings servers, one writing lone surrogates as JSON escapes (`escaped__…`), one as their bytes
    (`raw__…`)."""
    servers = {wire: {"command": sys.executable, "args": [RAW_STRINGS, wire]} for wire in WIRES}
    config = directory / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


@dataclass
class Received:
    """What the client read up to an answer: the answer and the notifications before it."""

    answer: dict[str, Any]
    notifications: list[dict[str, Any]] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)


class Wire:
    """A client of `offprompt serve` over stdio that writes raw lines and reads every line strictly: each must be
    JSON that orjson (strict UTF-8, no lone surrogate) reads."""

    def __init__(self, tmp_path: Path, config: Path | None = None, *, initialized: bool = True) -> None:
        """`initialized`: whether to send notifications/initialized (without it, no call takes the fast lane)."""
        args = ["--config", str(config)] if config is not None else []
        self.process = subprocess.Popen(
            offprompt_command("serve", *args, "--data-dir", str(tmp_path / "data")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin, stdout = self.process.stdin, self.process.stdout
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []  # every one read so far
        threading.Thread(target=lambda: [*map(self.lines.put, stdout), self.lines.put(b"")], daemon=True).start()
        self.send(json.dumps(INITIALIZE).encode())
        self.until("init")
        if initialized:
            self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def request(self, request_id: str, method: str, params: dict[str, Any]) -> Received:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
        return self.until(request_id)

    def read(self) -> tuple[bytes, dict[str, Any]]:
        """The next line and its message; a notification is kept in `notifications` too."""
        line = self.lines.get(timeout=HANG_SECONDS)  # queue.Empty: a hang
        if not line:
            self.lines.put(line)  # the next read fails at once too
            raise AssertionError(f"offprompt closed its output (exit status {self.process.wait(HANG_SECONDS)})")
        message = orjson.loads(line)  # raises on a lone surrogate, or bytes that are no UTF-8
        if "method" in message:
            self.notifications.append(message)
        return line, message

    def until(self, request_id: str | int | None) -> Received:
        """Read up to the answer to `request_id`."""
        received = Received({})
        while True:
            line, message = self.read()
            received.lines.append(line)
            if "method" in message:
                received.notifications.append(message)
            elif message.get("id") == request_id:
                received.answer = message
                return received

    def notification(self, method: str, holding: str) -> dict[str, Any]:
        """The first `method` notification read that holds `holding`, reading on until one comes (it may come
        after the answer to the call that sent it)."""
        while True:
            for note in self.notifications:
                if note["method"] == method and holding in json.dumps(note, ensure_ascii=False):
                    return note
            self.read()

    def alive(self) -> None:
        """The server still answers a memory tool."""
        listed = self.request("alive", "tools/call", {"name": "memory_list", "arguments": {}})
        assert "result" in listed.answer, listed.answer

    def close(self) -> int:
        """Close stdin, read what offprompt writes until it exits (notifications kept), and its exit status."""
        self.stdin.close()
        while line := self.lines.get(timeout=HANG_SECONDS):
            if "method" in (message := orjson.loads(line)):
                self.notifications.append(message)
        self.lines.put(line)
        return self.process.wait(timeout=HANG_SECONDS)


# -- from a client -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "answer_id"),
    [
        (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', None),
        (b'{"jsonrpc": "2.0", "id": "\xed\xa0\x80", "method": "ping"}', None),  # its bytes: WTF-8, not UTF-8
        (b'{"jsonrpc": "2.0", "id": 5, "method": "ping\\udc00"}', 5),
    ],
)
def test_a_client_id_or_method_holding_a_lone_surrogate_is_an_invalid_request(
    tmp_path: Path, line: bytes, answer_id: int | None
) -> None:
    # Before: the SDK could not write its answer to the id, and the server exited 1, whatever was in flight lost.
    client = Wire(tmp_path)
    client.send(line)
    refused = client.until(answer_id).answer
    assert refused["error"]["code"] == -32600
    assert "lone surrogate" in refused["error"]["message"]
    assert client.request("next", "ping", {}).answer["result"] == {}
    assert client.close() == 0


@pytest.mark.parametrize(
    ("method", "params", "where"),
    [
        ("resources/read", {"uri": "memory://default/\ud800"}, "params.uri"),  # before: error code 0
        ("tools/call", {"name": "memory_grep", "arguments": {"pattern": "a\udfffb"}}, "params.arguments.pattern"),
        ("prompts/get", {"name": "\ud800"}, "params.name"),
    ],
)
def test_a_client_request_holding_a_lone_surrogate_gets_invalid_params(
    tmp_path: Path, method: str, params: dict[str, Any], where: str
) -> None:
    client = Wire(tmp_path)
    refused = client.request("bad", method, params).answer
    assert refused["error"]["code"] == -32602, refused
    assert where in refused["error"]["message"]
    assert "lone surrogate" in refused["error"]["message"]
    client.alive()
    assert client.close() == 0


def test_a_client_notification_holding_a_lone_surrogate_is_read_as_u_fffd(tmp_path: Path) -> None:
    client = Wire(tmp_path)
    client.send(
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "\\ud800"}}'
    )
    client.send(b'{"jsonrpc": "2.0", "method": "notifications/\\udfff"}')
    client.alive()
    assert client.close() == 0


# -- from a downstream, over stdio -------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["fast lane", "SDK path"])
def stdio_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    """A stdio client whose proxied calls take the fast lane, or (never saying it is initialized) the SDK's path."""
    directory = tmp_path_factory.mktemp("stdio")
    client = Wire(directory, write_config(directory), initialized=request.param == "fast lane")
    assert "result" in client.request("level", "logging/setLevel", {"level": "debug"}).answer  # logs reach us
    yield client
    assert client.close() == 0


def emit(wire: str, where: str, text: str = "\udfff lone", **params: Any) -> dict[str, Any]:
    """The params of a call that has the `wire` server write `text` (and the planted key) `where`."""
    arguments = {"text": json.dumps(text), "where": where, "wire": wire}
    return {"name": f"{wire}__emit", "arguments": arguments, **params}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("where", ["result", "structured", "is_error", "error"])
def test_a_downstream_result_or_error_holding_a_lone_surrogate_reaches_the_client_as_u_fffd(
    stdio_client: Wire, wire: str, where: str
) -> None:
    received = stdio_client.request(f"{where}-{wire}", "tools/call", emit(wire, where))
    answer = b"".join(received.lines)
    assert "\ufffd lone".encode() in answer, answer[:500]
    assert AWS_KEY.encode() not in answer
    stdio_client.alive()


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("where", ["log", "progress"])
def test_a_downstream_notification_holding_a_lone_surrogate_reaches_the_client_as_u_fffd(
    stdio_client: Wire, wire: str, where: str
) -> None:
    # Before: a log message with "\udfff" made the server exit 1.
    params = emit(wire, where, f"\udfff lone -{where}-{wire}", _meta={"progressToken": f"p-{where}-{wire}"})
    assert "result" in stdio_client.request(f"{where}-{wire}", "tools/call", params).answer
    method = f"notifications/{'message' if where == 'log' else 'progress'}"
    assert "\ufffd lone" in json.dumps(stdio_client.notification(method, f"-{where}-{wire}"), ensure_ascii=False)
    stdio_client.alive()


@pytest.mark.parametrize("wire", WIRES)
def test_a_downstream_resource_and_prompt_holding_lone_surrogates_reach_the_client_as_u_fffd(
    stdio_client: Wire, wire: str
) -> None:
    listed = stdio_client.request(f"resources-{wire}", "resources/list", {}).answer["result"]["resources"]
    (resource,) = [r for r in listed if r["uri"].startswith(f"raw://{wire}/")]
    assert resource["uri"] == f"raw://{wire}/\ufffd"
    assert resource["name"].startswith(f"{wire}__\ufffd lone")
    read = stdio_client.request(f"read-{wire}", "resources/read", {"uri": resource["uri"]})
    assert read.answer["result"]["contents"][0]["text"].startswith("\ufffd lone ")
    prompts = stdio_client.request(f"prompts-{wire}", "prompts/list", {}).answer["result"]["prompts"]
    assert f"{wire}__note" in [p["name"] for p in prompts]
    prompt = stdio_client.request(f"prompt-{wire}", "prompts/get", {"name": f"{wire}__note"})
    assert prompt.answer["result"]["messages"][0]["content"]["text"].startswith("\ufffd lone ")
    for received in (read, prompt):
        assert AWS_KEY.encode() not in b"".join(received.lines)
    stdio_client.alive()


def test_a_downstream_line_of_latin_1_bytes_reaches_the_client_as_u_fffd(stdio_client: Wire) -> None:
    arguments = {"text": json.dumps("caf\u00e9"), "where": "result", "wire": "latin1"}
    received = stdio_client.request("latin1", "tools/call", {"name": "escaped__emit", "arguments": arguments})
    assert received.answer["result"]["content"][0]["text"].startswith("caf\ufffd ")
    stdio_client.alive()


# -- from a downstream over HTTP or SSE --------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["http", "sse"])
def behind_http(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    """A stdio client of offprompt, with the raw-strings servers behind it over streamable HTTP or legacy SSE."""
    directory = tmp_path_factory.mktemp(f"behind-{request.param}")
    command = [sys.executable, RAW_STRINGS]
    with (
        serving([*command, "escaped", request.param], r"listening at (\S+)") as escaped,
        serving([*command, "raw", request.param], r"listening at (\S+)") as raw,
    ):
        config = directory / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"escaped": {"url": escaped.url}, "raw": {"url": raw.url}}}))
        client = Wire(directory, config)
        assert "result" in client.request("level", "logging/setLevel", {"level": "debug"}).answer
        yield client
        assert client.close() == 0


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "where",
    ["result", "structured", "is_error", "error", "log", "progress"],
)
def test_an_http_downstream_s_lone_surrogates_reach_the_client_as_u_fffd(
    behind_http: Wire, wire: str, where: str
) -> None:
    # Before: the SDK's client refused the message: a result or error became -32700, a log or progress was lost.
    marker = f"-{where}-{wire}"
    params = emit(wire, where, f"\udfff lone {marker}", _meta={"progressToken": f"p{marker}"})
    received = behind_http.request(f"http{marker}", "tools/call", params)
    answer = b"".join(received.lines)
    if where in ("log", "progress"):
        method = f"notifications/{'message' if where == 'log' else 'progress'}"
        assert "\ufffd lone" in json.dumps(behind_http.notification(method, marker), ensure_ascii=False)
    else:
        assert "\ufffd lone".encode() in answer, answer[:500]
        assert AWS_KEY.encode() not in answer
    behind_http.alive()


# -- over HTTP and SSE -------------------------------------------------------------------------------------------------


@asynccontextmanager
async def session_over(transport: str, url: str, logs: list[str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized client session over `transport` ("http" or "sse"); the log messages it hears go to `logs`."""

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        if logs is not None:
            logs.append(f"{params.logger} {json.dumps(params.data, ensure_ascii=False)}")

    async with AsyncExitStack() as stack:
        if transport == "sse":
            read, write = await stack.enter_async_context(sse_client(url))
        else:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=HANG_SECONDS))
            read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write, logging_callback=on_log))
        await session.initialize()
        yield session


@pytest.fixture(scope="module", params=["http", "sse"])
def http_served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """offprompt over each HTTP transport, the raw-strings servers behind it; `served.transport` says which."""
    directory = tmp_path_factory.mktemp(request.param)
    config = write_config(directory)
    with offprompt_serving(directory / "data", "--config", str(config), "--transport", request.param) as served:
        yield served


def transport_of(served: Served) -> str:
    return "sse" if served.url.rstrip("/").endswith("/sse") else "http"


def _text(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # logging/setLevel, in 2026-07-28
@pytest.mark.parametrize("wire", WIRES)
async def test_over_http_and_sse_every_downstream_string_reaches_the_client_as_u_fffd(
    http_served: Served, wire: str
) -> None:
    logs: list[str] = []
    with anyio.fail_after(HANG_SECONDS):
        async with session_over(transport_of(http_served), http_served.url, logs) as session:
            await session.set_logging_level("debug")
            result = await session.call_tool(f"{wire}__emit", emit(wire, "result")["arguments"])
            assert _text(result).startswith("\ufffd lone ")
            failed = await session.call_tool(f"{wire}__emit", emit(wire, "is_error")["arguments"])
            assert failed.is_error
            assert _text(failed).startswith("\ufffd lone ")
            with pytest.raises(MCPError) as error:
                await session.call_tool(f"{wire}__emit", emit(wire, "error")["arguments"])
            assert error.value.error.message.startswith("\ufffd lone ")
            assert _text(await session.call_tool(f"{wire}__emit", emit(wire, "log")["arguments"])) == "log"
            resources = (await session.list_resources()).resources
            (resource,) = [r for r in resources if str(r.uri).startswith(f"raw://{wire}/")]
            read = (await session.read_resource(resource.uri)).contents[0]
            assert isinstance(read, mt.TextResourceContents)
            assert read.text.startswith("\ufffd lone ")
            prompt = (await session.get_prompt(f"{wire}__note")).messages[0].content
            assert isinstance(prompt, mt.TextContent)
            assert prompt.text.startswith("\ufffd lone ")
            seen = [_text(result), _text(failed), error.value.error.message, read.text, prompt.text]
            assert not [text for text in seen if AWS_KEY in text]
            assert not (await session.call_tool("memory_list", {})).is_error
            assert [log for log in logs if "\ufffd lone" in log], logs
    assert http_served.process.poll() is None


@pytest.mark.anyio
@pytest.mark.parametrize("http_served", ["http"], indirect=True)
async def test_an_http_request_holding_a_lone_surrogate_is_refused_and_the_server_serves_on(
    http_served: Served,
) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    line = b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'
    async with httpx.AsyncClient(timeout=HANG_SECONDS) as http:
        refused = await http.post(http_served.url, content=line, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] in (-32700, -32600)
    with anyio.fail_after(HANG_SECONDS):
        async with session_over("http", http_served.url) as session:
            assert not (await session.call_tool("memory_list", {})).is_error


# -- a fuzz: any string, anywhere a downstream puts it -----------------------------------------------------------------

#: Pieces of hostile strings: any code point (lone surrogates and NUL among them), halves of a pair, long runs
#: without white space, runs of NULs.
_piece = (
    st.text(st.characters(codec=None, categories=None), max_size=16)
    | st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ude00", "\x00", "\ufffd", "\\", '"'])
    | st.integers(1, 3_000).map(lambda n: "z" * n)
    | st.integers(1, 200).map(lambda n: "\x00" * n)
)
_hostile = st.lists(_piece, max_size=5).map("".join)
_calls = st.fixed_dictionaries(
    {
        "server": st.sampled_from(["escaped", "raw", "vault"]),
        "where": st.sampled_from(["result", "structured", "is_error", "error", "log", "progress"]),
        "text": _hostile,
        "depth": st.integers(0, 300),  # past what the SDK's models write (200)
        "wire": st.sampled_from(["escaped", "raw", "latin1"]),
    }
)


def leaked(message: dict[str, Any]) -> bool:
    """Whether the planted key reached the client in clear."""
    return AWS_KEY in json.dumps(message)  # the standard library's: orjson stops at 255 levels


def test_any_string_a_downstream_writes_leaves_the_server_serving_and_leaks_no_planted_secret(tmp_path: Path) -> None:
    servers = {wire: {"command": sys.executable, "args": [RAW_STRINGS, wire]} for wire in WIRES}
    servers["vault"] = {"command": sys.executable, "args": [RAW_STRINGS], "off_prompt": "always"}
    config = tmp_path / "mcp.json"  # a low threshold: long strings are stored off the prompt, their outline shown
    config.write_text(json.dumps({"offprompt": {"threshold_tokens": 1000}, "mcpServers": servers}))
    client = Wire(tmp_path, config)
    assert "result" in client.request("level", "logging/setLevel", {"level": "debug"}).answer
    calls = iter(range(10**9))

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_calls)
    def one(call: dict[str, Any]) -> None:
        arguments = {"text": json.dumps(call["text"]), **{k: call[k] for k in ("where", "depth", "wire")}}
        n = next(calls)
        params = {"name": f"{call['server']}__emit", "arguments": arguments, "_meta": {"progressToken": n}}
        answer = client.request(f"call-{n}", "tools/call", params).answer  # read strictly: UTF-8, no lone surrogate
        assert ("result" in answer) != ("error" in answer), answer
        assert not leaked(answer), answer
        client.alive()

    one()
    assert client.close() == 0
    notifications = client.notifications  # every log and progress message the client read, the whole fuzz long
    assert [note for note in notifications if note["method"] == "notifications/progress"]
    assert not [note for note in notifications if leaked(note)]  # logs and progress carry handles, never the key
