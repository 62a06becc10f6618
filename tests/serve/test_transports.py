"""`offprompt serve` over real HTTP on 127.0.0.1: streamable HTTP for both protocol versions, legacy SSE, and the
HTTP security checks (Host, Origin, bearer tokens, body cap, no token passthrough, per-token namespaces)."""

from __future__ import annotations

import base64
import io
import json
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import mcp_types as mt
import PIL.Image
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Message, Receive, Scope, Send

from offprompt.errors import ConfigError
from offprompt.serve.http import RequestGuard, TransportSettings, is_loopback, owner_id, parse_tokens
from offprompt.serve.http_apps import SessionCap

from ..serving import Served, clean_env, headers_serving, offprompt_serving, recorded_headers
from ..support import REPO, noise_png, offprompt_command

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = {"memory_load", "memory_query", "memory_grep", "memory_list", "memory_delete"}
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
CAP = 4 * 1024 * 1024
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


# -- servers (one of each per module: starting offprompt takes about a second) ----------------------------------


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with offprompt_serving(tmp_path_factory.mktemp("http"), "--transport", "http") as served:
        yield served


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with offprompt_serving(tmp_path_factory.mktemp("sse"), "--transport", "sse") as served:
        yield served


@pytest.fixture(params=["http", "sse"])
def served(request: pytest.FixtureRequest) -> Served:
    """Each HTTP transport in turn: the checks guard both."""
    server: Served = request.getfixturevalue(f"{request.param}_server")
    return server


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    record = tmp_path_factory.mktemp("recorder") / "headers.jsonl"
    with headers_serving(record) as served:
        yield served, record


def _with_tokens(directory: Path, recorder: tuple[Served, Path], *args: str) -> AbstractContextManager[Served]:
    """offprompt with Alice's and Bob's tokens from the environment and the header-recording downstream behind
    it, whose every result is stored off the prompt."""
    config = directory / "offprompt.json"
    downstream = {"url": recorder[0].url, "headers": {"X-Offprompt-Test": "configured"}, "off_prompt": "always"}
    config.write_text(json.dumps({"mcpServers": {"rec": downstream}}))
    env = clean_env(OFFPROMPT_AUTH_TOKEN=f"{ALICE},{BOB}")
    return offprompt_serving(directory / "data", "--config", str(config), *args, env=env)


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory, recorder: tuple[Served, Path]) -> Iterator[Served]:
    """Streamable HTTP on every interface, which is allowed only because tokens are set."""
    with _with_tokens(tmp_path_factory.mktemp("tokens"), recorder, "--transport", "http", "--host", "0.0.0.0") as s:
        yield s


@pytest.fixture(scope="module")
def sse_token_server(tmp_path_factory: pytest.TempPathFactory, recorder: tuple[Served, Path]) -> Iterator[Served]:
    with _with_tokens(tmp_path_factory.mktemp("sse-tokens"), recorder, "--transport", "sse") as served:
        yield served


def local_url(served: Served) -> str:
    """The server's URL on 127.0.0.1 (a server on 0.0.0.0 announces that too)."""
    return served.url.replace("0.0.0.0", "127.0.0.1")


@asynccontextmanager
async def session_for(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """A 2025-11-25 `ClientSession` over streamable HTTP, initialized, sending `token` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


# -- clients of every kind list and call tools --------------------------------------------------------------------


async def test_a_2025_client_with_a_session_lists_and_calls_tools(http_server: Served) -> None:
    async with (
        streamable_http_client(http_server.url) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "offprompt"
        assert {t.name for t in (await session.list_tools()).tools} >= MEMORY_TOOLS
        listed = await session.call_tool("memory_list", {})
        assert not listed.is_error
        assert "holds nothing yet" in text_of(listed)


async def test_a_2026_client_without_a_session_lists_and_calls_tools(http_server: Served) -> None:
    async with Client(http_server.url) as client:
        assert client.protocol_version == "2026-07-28"
        assert {t.name for t in (await client.list_tools()).tools} >= MEMORY_TOOLS
        listed = await client.call_tool("memory_list", {})
        assert not listed.is_error
        assert "holds nothing yet" in text_of(listed)


async def test_a_2026_request_needs_no_session_id(http_server: Served) -> None:
    # One self-contained POST, no initialize, no Mcp-Session-Id: the 2026-07-28 wire.
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {**POST_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(http_server.url, json=request, headers=headers)
    assert response.status_code == 200, response.text
    assert "mcp-session-id" not in response.headers
    assert {t["name"] for t in response.json()["result"]["tools"]} >= MEMORY_TOOLS


def test_the_whitespace_around_a_header_value_is_not_part_of_it(http_server: Served) -> None:
    """RFC 9110 5.5: `Mcp-Name:   memory_list  ` names memory_list (the parser keeps trailing spaces; offprompt
    drops them, as h11 did). Sent on a raw socket: HTTP clients refuse to send such a value."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "memory_list",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    parts = re.match(r"http://([^/:]+):(\d+)(/.*)", http_server.url)
    assert parts is not None
    host, port, path = parts[1], int(parts[2]), parts[3]
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        f"Mcp-Method: tools/call\r\nMcp-Name:   memory_list  \r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(head.encode() + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b'"isError"' not in answer or b'"isError":false' in answer


async def test_an_sse_client_lists_and_calls_tools(sse_server: Served) -> None:
    assert sse_server.url.endswith("/sse")
    async with sse_client(sse_server.url) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "offprompt"
        assert {t.name for t in (await session.list_tools()).tools} >= MEMORY_TOOLS
        listed = await session.call_tool("memory_list", {})
        assert not listed.is_error


async def test_a_2025_http_client_hears_that_the_proxied_tools_changed(tmp_path: Path) -> None:
    # A downstream whose tools change (tests/servers/counter.py `grow` adds `extra`) behind offprompt over HTTP.
    counter = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "counter.py")]}
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"counter": counter}}))
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    with offprompt_serving(tmp_path / "data", "--config", str(config), "--transport", "http") as served:
        async with (
            streamable_http_client(served.url) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            init = await session.initialize()
            caps = init.capabilities
            assert caps.tools is not None
            assert caps.tools.list_changed
            assert caps.prompts is not None
            assert caps.prompts.list_changed
            assert caps.resources is not None
            assert caps.resources.list_changed
            assert "counter__extra" not in {t.name for t in (await session.list_tools()).tools}
            assert text_of(await session.call_tool("counter__grow", {})) == "grown"
            with anyio.fail_after(30):  # bounds a hang; the notification comes within a second
                await changed.wait()
            assert "counter__extra" in {t.name for t in (await session.list_tools()).tools}


# -- Host, Origin, body size ----------------------------------------------------------------------------------------


async def _probe(served: Served, headers: dict[str, str], content: bytes | None = None) -> httpx.Response:
    """One request of the kind the transport starts with: POST /mcp initialize, or GET /sse."""
    async with httpx.AsyncClient(timeout=30) as http:
        if served.url.endswith("/mcp"):
            body = content if content is not None else json.dumps(INITIALIZE).encode()
            return await http.post(served.url, content=body, headers={**POST_HEADERS, **headers})
        async with http.stream("GET", served.url, headers=headers) as response:
            if response.status_code != 200:
                await response.aread()  # a refusal's body; the SSE stream itself is not read
            return response


def assert_json_error(response: httpx.Response, error: str) -> None:
    """A refusal a client can parse: JSON with OAuth's `error` and a sentence in `error_description`."""
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["error"] == error
    assert len(body["error_description"]) > 20


async def test_a_foreign_origin_is_refused_with_403(served: Served) -> None:
    refused = await _probe(served, {"Origin": "http://evil.example.com"})
    assert refused.status_code == 403
    assert_json_error(refused, "forbidden")
    port = served.origin.rsplit(":", 1)[1]
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", "https://localhost"):
        assert (await _probe(served, {"Origin": origin})).status_code == 200, origin
    for origin in ("null", "http://localhost.evil.example.com", "http://127.0.0.1.evil.example.com:80"):
        assert (await _probe(served, {"Origin": origin})).status_code == 403, origin


async def test_a_foreign_host_is_refused_with_421(served: Served) -> None:
    # A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header gives it away.
    refused = await _probe(served, {"Host": "evil.example.com"})
    assert refused.status_code == 421
    assert_json_error(refused, "misdirected_request")
    assert (await _probe(served, {"Host": "evil.example.com:80"})).status_code == 421
    assert (await _probe(served, {"Host": "localhost@evil.example.com"})).status_code == 421
    assert (await _probe(served, {"Host": "localhost"})).status_code == 200


async def test_a_body_over_the_cap_is_refused_with_413(served: Served) -> None:
    body = b" " * (CAP + 1)
    async with httpx.AsyncClient(timeout=30) as http:
        if served.url.endswith("/mcp"):
            response = await http.post(served.url, content=body, headers=POST_HEADERS)
        else:
            messages = f"{served.origin}/messages/?session_id={'0' * 32}"
            response = await http.post(messages, content=body, headers=POST_HEADERS)
    assert response.status_code == 413
    assert_json_error(response, "request_too_large")


# -- binding beyond loopback, tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_public_address_without_a_token_refuses_to_start(tmp_path: Path, transport: str) -> None:
    command = offprompt_command(
        "serve", "--transport", transport, "--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path)
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=clean_env(), check=False)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0" in done.stderr
    assert "reachable from other machines" in done.stderr
    assert "--auth-token" in done.stderr
    assert "OFFPROMPT_AUTH_TOKEN" in done.stderr


async def test_a_missing_or_wrong_token_is_refused_with_401(token_server: Served) -> None:
    url = local_url(token_server)

    async def initialize(authorization: str | None) -> httpx.Response:
        headers = {**POST_HEADERS, "Authorization": authorization} if authorization else POST_HEADERS
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.post(url, json=INITIALIZE, headers=headers)

    missing = await initialize(None)
    wrong = await initialize(f"Bearer {ALICE}x")
    other_scheme = await initialize(f"Basic {ALICE}")
    right = await initialize(f"Bearer {ALICE}")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="offprompt"'
    assert_json_error(missing, "invalid_request")
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    assert_json_error(wrong, "invalid_token")  # RFC 6750's name, as an OAuth client parses it
    assert other_scheme.status_code == 401
    assert right.status_code == 200


async def test_clients_with_a_token_list_and_call_tools(token_server: Served) -> None:
    url = local_url(token_server)
    async with session_for(url, ALICE) as session:
        assert {t.name for t in (await session.list_tools()).tools} >= {*MEMORY_TOOLS, "rec__echo"}
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        assert not (await client.call_tool("memory_list", {})).is_error


async def test_a_session_answers_only_the_token_that_opened_it(token_server: Served) -> None:
    url = local_url(token_server)
    async with httpx.AsyncClient(timeout=30) as http:
        opened = await http.post(url, json=INITIALIZE, headers={**POST_HEADERS, "Authorization": f"Bearer {ALICE}"})
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        as_bob = await http.post(url, json=ping, headers={**POST_HEADERS, **session, "Authorization": f"Bearer {BOB}"})
        as_alice = await http.post(
            url, json=ping, headers={**POST_HEADERS, **session, "Authorization": f"Bearer {ALICE}"}
        )
    assert as_bob.status_code == 404
    assert as_alice.status_code == 200


async def test_a_namespace_stored_by_one_token_is_hidden_from_another(token_server: Served) -> None:
    url = local_url(token_server)
    async with session_for(url, ALICE) as alice:
        stored = await alice.call_tool("rec__echo", {"text": "alice's secret"})
        namespace = stored.meta["offprompt"]["artifact_namespace"] if stored.meta else None
        assert namespace, text_of(stored)
        uri = f"memory://default/{namespace}"
        assert namespace in text_of(await alice.call_tool("memory_list", {}))
        loaded = await alice.call_tool("memory_load", {"artifact_namespace": namespace})
        assert text_of(loaded).startswith("alice's secret")
        assert (await alice.read_resource(uri)).contents
    async with session_for(url, BOB) as bob:
        assert namespace not in text_of(await bob.call_tool("memory_list", {}))
        refused = await bob.call_tool("memory_load", {"artifact_namespace": namespace})
        assert refused.is_error
        assert "alice's secret" not in text_of(refused)
        grep = await bob.call_tool("memory_grep", {"pattern": "secret"})
        assert "alice's secret" not in text_of(grep)
        outline = await bob.call_tool("memory_outline", {"artifact_namespace": namespace})
        assert outline.is_error  # not even its headings
        assert "alice's secret" not in text_of(outline)
        with pytest.raises(MCPError):
            await bob.read_resource(uri)
        assert namespace not in {r.name for r in (await bob.list_resources()).resources}
    async with (  # the 2026-07-28 wire carries the token's owner too
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as modern_bob,
    ):
        assert namespace not in text_of(await modern_bob.call_tool("memory_list", {}))
        assert (await modern_bob.call_tool("memory_load", {"artifact_namespace": namespace})).is_error


async def test_query_without_a_namespace_and_delete_keep_to_the_callers_token(token_server: Served) -> None:
    url = local_url(token_server)
    secret = "the vault combination is quartzlily marmalade"
    async with session_for(url, ALICE) as alice:
        stored = await alice.call_tool("rec__echo", {"text": secret})
        namespace = stored.meta["offprompt"]["artifact_namespace"] if stored.meta else None
        assert namespace, text_of(stored)
        # An `always` output is read only when named (an unnamed query leaves it out): its owner names it.
        mine = await alice.call_tool("memory_query", {"query": "quartzlily marmalade", "artifact_namespace": namespace})
        assert "quartzlily" in text_of(mine)  # so the query does find it, for its owner
    async with session_for(url, BOB) as bob:
        for mode in ("hybrid", "lexical"):
            theirs = await bob.call_tool("memory_query", {"query": "quartzlily marmalade", "mode": mode})
            assert "quartzlily" not in text_of(theirs)
            assert namespace not in text_of(theirs)
            named = await bob.call_tool(
                "memory_query", {"query": "quartzlily marmalade", "mode": mode, "artifact_namespace": namespace}
            )
            assert "quartzlily" not in text_of(named)
        refused = await bob.call_tool("memory_delete", {"artifact_namespace": namespace})
        assert refused.is_error
    async with session_for(url, ALICE) as alice:
        kept = await alice.call_tool("memory_load", {"artifact_namespace": namespace})
        assert text_of(kept).startswith(secret)  # Bob's delete took nothing away


async def test_over_sse_too_a_token_is_required_and_keeps_namespaces_apart(sse_token_server: Served) -> None:
    async with httpx.AsyncClient(timeout=30) as http, http.stream("GET", sse_token_server.url) as response:
        assert response.status_code == 401

    @asynccontextmanager
    async def sse_session(token: str) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {token}"}
        async with sse_client(sse_token_server.url, headers=headers) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            yield s

    async with sse_session(ALICE) as alice:
        stored = await alice.call_tool("rec__echo", {"text": "alice's secret"})
        namespace = stored.meta["offprompt"]["artifact_namespace"] if stored.meta else None
        assert namespace, text_of(stored)
        assert not (await alice.call_tool("memory_load", {"artifact_namespace": namespace})).is_error
    async with sse_session(BOB) as bob:
        assert namespace not in text_of(await bob.call_tool("memory_list", {}))
        assert (await bob.call_tool("memory_load", {"artifact_namespace": namespace})).is_error


async def test_the_clients_authorization_never_reaches_the_downstream(
    token_server: Served, recorder: tuple[Served, Path]
) -> None:
    downstream, record = recorder
    # Directly, the recorder does see an Authorization header: the check below would catch a leak.
    async with session_for(downstream.url, "direct-call-token-0123456789") as direct:
        assert text_of(await direct.call_tool("echo", {"text": "hi"})) == "hi"
    assert any(h.get("authorization") == ["Bearer direct-call-token-0123456789"] for h in recorded_headers(record))
    record.unlink()

    async with session_for(local_url(token_server), ALICE) as session:
        result = await session.call_tool("rec__echo", {"text": "through offprompt"})
        assert not result.is_error
    seen = recorded_headers(record)
    assert seen, "the call did not reach the downstream"
    assert all(h.get("x-offprompt-test") == ["configured"] for h in seen)  # the configured headers do
    assert not any("authorization" in h for h in seen)
    assert not any(ALICE in value for h in seen for values in h.values() for value in values)


# -- settings -------------------------------------------------------------------------------------------------------


def test_tokens_come_as_a_comma_list_or_repeated() -> None:
    assert parse_tokens([f"{ALICE}, {BOB}", ALICE, ""]) == (ALICE, BOB)
    assert owner_id(ALICE) == owner_id(ALICE) != owner_id(BOB)
    assert ALICE not in owner_id(ALICE)
    assert ALICE not in repr(TransportSettings(transport="http", auth_tokens=(ALICE,)))


def test_bad_settings_say_what_to_do() -> None:
    with pytest.raises(ConfigError, match="at least 16 characters"):
        TransportSettings(transport="http", auth_tokens=("short",))
    with pytest.raises(ConfigError, match=r"refusing to listen on 192\.0\.2\.7"):
        TransportSettings(transport="sse", host="192.0.2.7")
    with pytest.raises(ConfigError, match="not a TCP port"):
        TransportSettings(transport="http", port=70000)
    assert TransportSettings(transport="http", host="192.0.2.7", auth_tokens=(ALICE,)).local_names() >= {
        "192.0.2.7",
        "localhost",
    }
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST."))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.0.2.7", "example.com", ""))


async def test_the_guard_hands_the_caller_on_but_not_the_credential() -> None:
    seen: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)
        await PlainTextResponse("ok")(scope, receive, send)

    guard = RequestGuard(app, TransportSettings(transport="http", auth_tokens=(ALICE, BOB)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="http://127.0.0.1:1") as http:
        response = await http.get("/mcp", headers={"Authorization": f"bearer  {BOB} "})
    assert response.status_code == 200
    (scope,) = seen
    assert all(name != b"authorization" for name, _ in scope["headers"])
    assert BOB.encode() not in b"".join(value for _, value in scope["headers"])
    assert scope["user"].access_token.client_id == owner_id(BOB)
    assert scope["user"].access_token.token != BOB


async def guarded(
    settings: TransportSettings, headers: dict[str, str], seen: list[Scope] | None = None
) -> httpx.Response:
    """One GET through the guard (in process), with these headers, to an app that answers "ok"."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if seen is not None:
            seen.append(scope)
        await PlainTextResponse("ok")(scope, receive, send)

    transport = httpx.ASGITransport(app=RequestGuard(app, settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as http:
        return await http.get("/mcp", headers=headers)


LOCAL = TransportSettings(transport="http", allowed_hosts=("Tools.Example.COM.", "XBOX", "[2001:DB8:0::1]"))


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", 200),
        ("localhost", 200),
        ("LocalHost.:80", 200),
        ("[::1]:8765", 200),
        ("[0:0::1]", 200),  # the same address written longer
        ("tools.example.com", 200),  # an --allow-host, in any case, with or without its final dot
        ("xbox:8765", 200),
        ("[2001:db8::1]:8765", 200),  # an --allow-host address, written either way
        ("evil.example", 421),
        ("127.0.0.1.evil.example", 421),
        ("localhost.evil.example:80", 421),
        ("example.com", 421),
        ("127.0.0.2", 421),
        ("localhost:99999999", 421),
        ("user@localhost", 421),
        ("", 421),
    ],
)
async def test_the_guard_answers_only_requests_addressed_to_a_local_name(
    host: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    response = await guarded(LOCAL, {"Host": host})
    assert response.status_code == status
    if status == 421:
        assert response.json()["error_description"] == (
            "Misdirected request: this offprompt answers only to localhost names (see --allow-host)."
        )
        assert f"refused a request addressed to Host {host!r}" in caplog.messages


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
async def test_listening_on_every_address_does_not_make_that_address_a_host_name(host: str) -> None:
    """`--host 0.0.0.0` says where to listen, not a name clients use: a page rebinding its name to it is refused."""
    settings = TransportSettings(transport="http", host=host, auth_tokens=(ALICE,))
    assert not {"0.0.0.0", "::"} & settings.local_names()
    for bad in ("0.0.0.0:8765", "[::]:8765"):
        refused = await guarded(settings, {"Host": bad, "Authorization": f"Bearer {ALICE}"})
        assert refused.status_code == 421, bad
    origin = await guarded(settings, {"Origin": "http://0.0.0.0:8765", "Authorization": f"Bearer {ALICE}"})
    assert origin.status_code == 403


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://localhost:3000", 200),
        ("https://127.0.0.1", 200),
        ("http://[::1]:6274", 200),
        ("https://tools.example.com", 200),
        ("http://evil.example", 403),
        ("https://localhost.evil.example", 403),
        ("http://user@localhost", 403),  # what a browser shows as localhost is evil.example's page here
        ("http://localhost/path", 403),  # an Origin is scheme://host[:port], nothing more
        ("ftp://localhost", 403),
        ("null", 403),
        ("", 403),
    ],
)
async def test_the_guard_refuses_a_foreign_web_origin(
    origin: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    response = await guarded(LOCAL, {"Origin": origin})
    assert response.status_code == status
    if status == 403:
        assert response.json()["error_description"] == "Forbidden: requests from this web origin are not allowed."
        assert f"refused a request from Origin {origin!r}" in caplog.messages


async def test_the_guard_says_how_to_authenticate_and_which_token_was_wrong(caplog: pytest.LogCaptureFixture) -> None:
    settings = TransportSettings(transport="http", auth_tokens=(ALICE, BOB))
    missing = await guarded(settings, {})
    assert caplog.messages == ["refused a request: send `Authorization: Bearer <token>`"]
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="offprompt"'
    assert missing.json() == {
        "error": "invalid_request",
        "error_description": "Unauthorized: send `Authorization: Bearer <token>`.",
    }
    for wrong in (f"Bearer {ALICE}x", f"Basic {ALICE}", "Bearer ", "Bearer", ALICE, f"Bearer {owner_id(ALICE)}"):
        refused = await guarded(settings, {"Authorization": wrong})
        assert refused.status_code == 401, wrong
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="offprompt", error="invalid_token"'
        assert refused.json() == {
            "error": "invalid_token",
            "error_description": "Unauthorized: the bearer token is not valid.",
        }
        assert caplog.messages[-1] == "refused a request: the bearer token is not valid"
    seen: list[Scope] = []
    assert (await guarded(settings, {"Authorization": f"Bearer {ALICE}"}, seen)).status_code == 200
    assert seen[0]["user"].access_token.client_id == owner_id(ALICE)
    # A foreign Host is refused before the token is looked at: a rebinding page learns nothing about tokens.
    assert (await guarded(settings, {"Host": "evil.example", "Authorization": f"Bearer {ALICE}"})).status_code == 421


async def test_without_tokens_the_guard_names_no_caller_and_still_drops_the_credential() -> None:
    seen: list[Scope] = []
    response = await guarded(LOCAL, {"Authorization": f"Bearer {ALICE}"}, seen)
    assert response.status_code == 200
    assert "user" not in seen[0]
    assert all(name != b"authorization" for name, _ in seen[0]["headers"])
    # Other traffic than HTTP requests (the server's lifespan) passes untouched.
    passed: list[object] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        passed.extend((scope, receive, send))

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        pass

    lifespan: Scope = {"type": "lifespan", "headers": [(b"host", b"evil.example")]}
    await RequestGuard(app, LOCAL)(lifespan, receive, send)
    assert passed == [lifespan, receive, send]


async def test_the_guard_passes_the_request_body_on() -> None:
    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        body = await Request(scope, receive).body()
        await PlainTextResponse(body.decode())(scope, receive, send)

    guard = RequestGuard(echo, TransportSettings(transport="http", auth_tokens=(ALICE,)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="http://127.0.0.1:1") as http:
        response = await http.post("/mcp", content=b'{"jsonrpc": "2.0"}', headers={"Authorization": f"Bearer {ALICE}"})
    assert response.text == '{"jsonrpc": "2.0"}'


def test_the_guards_owner_of_a_token_is_stable_across_versions() -> None:
    # Namespaces on disk carry this id: a change would hide every stored output from its own caller.
    assert owner_id(ALICE) == "93c7d3ad5428b80db2bc0782d8dc3c28"
    assert parse_tokens([f" {BOB} ,{ALICE},,", f"{BOB}", " "]) == (BOB, ALICE)


def test_sigterm_stops_the_server_with_status_0_even_with_a_client_connected(tmp_path: Path) -> None:
    with (
        offprompt_serving(tmp_path, "--transport", "sse") as served,
        httpx.stream("GET", served.url, timeout=30) as stream,
    ):
        assert stream.status_code == 200
        served.process.terminate()
        assert served.process.wait(timeout=30) == 0
    assert "Application shutdown complete" in served.stderr()


def test_the_announced_url_names_the_free_port(http_server: Served) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", http_server.url)
    assert not http_server.url.endswith(":0/mcp")


# -- sessions per token -------------------------------------------------------------------------------------------


def _session_id(opened: httpx.Response) -> str:
    return opened.headers["mcp-session-id"]


async def _open_session(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    return await http.post(url, json=INITIALIZE, headers={**POST_HEADERS, "Authorization": f"Bearer {token}"})


async def test_one_token_cannot_take_every_session_and_idle_sessions_close(tmp_path: Path) -> None:
    env = clean_env(OFFPROMPT_AUTH_TOKEN=f"{ALICE},{BOB}")
    # 6 s idle: the three sessions must still be open when the fourth is refused, on a machine busy with other tests.
    args = ("--transport", "http", "--max-sessions-per-token", "3", "--session-idle-seconds", "6")
    with offprompt_serving(tmp_path / "data", *args, env=env) as served:
        async with httpx.AsyncClient(timeout=30) as http:
            opened = [await _open_session(http, served.url, ALICE) for _ in range(3)]
            assert [r.status_code for r in opened] == [200, 200, 200]
            refused = await _open_session(http, served.url, ALICE)
            assert refused.status_code == 429
            listed = await http.post(  # a session Alice holds still answers
                served.url,
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                headers={**POST_HEADERS, "Authorization": f"Bearer {ALICE}", "Mcp-Session-Id": _session_id(opened[-1])},
            )
            assert listed.status_code == 200
            assert "already holds 3 open MCP sessions" in refused.text
            assert_json_error(refused, "too_many_sessions")
            assert refused.headers["retry-after"] == "6"
            assert "--max-sessions-per-token" in refused.text
            # Other tokens still get sessions, and Alice's own sessions and session-less requests still work.
            assert (await _open_session(http, served.url, BOB)).status_code == 200
            async with session_for(served.url, BOB) as session:
                assert not (await session.call_tool("memory_list", {})).is_error
            # Idle sessions close by themselves (after 6 s here), and Alice can open sessions again.
            with anyio.fail_after(60):
                for _ in range(120):
                    again = await _open_session(http, served.url, ALICE)
                    if again.status_code != 429:
                        break
                    await anyio.sleep(0.5)
            assert again.status_code == 200


class _Registry:
    """The two registries of the SDK's session manager that `SessionCap` reads."""

    def __init__(self) -> None:
        self._server_instances: dict[str, object] = {}
        self._session_owners: dict[str, object] = {}


async def test_a_session_is_counted_once_while_its_opening_request_finishes() -> None:
    """The manager registers a session before it answers, and the opening request goes on a while after its
    client has the answer: a session counted both as registered and as reserved then refused one the token
    could still open."""
    registry, finishing = _Registry(), anyio.Event()

    async def manager(scope: Scope, receive: Receive, send: Send) -> None:
        registry._server_instances[f"s{len(registry._server_instances)}"] = object()
        await PlainTextResponse("opened")(scope, receive, send)
        await finishing.wait()  # answered, and still running

    cap = SessionCap(manager, registry, limit=2, idle_seconds=60)  # type: ignore[arg-type]
    statuses: list[int] = []

    async def open_one(answered: anyio.Event) -> None:
        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
                answered.set()

        await cap({"type": "http", "method": "POST", "headers": []}, receive, send)

    async with anyio.create_task_group() as tg:
        for _ in range(3):  # each after the one before has its answer and is still finishing; the cap is 2
            answered = anyio.Event()
            tg.start_soon(open_one, answered)
            await answered.wait()
        finishing.set()
    assert statuses == [200, 200, 429]


async def test_concurrent_initializes_of_one_token_are_admitted_up_to_its_cap_only(tmp_path: Path) -> None:
    """The cap is taken atomically: a burst of initialize POSTs, all in flight at once, may not all pass a check
    made before any of them has registered its session."""
    env = clean_env(OFFPROMPT_AUTH_TOKEN=ALICE)
    with offprompt_serving(tmp_path / "data", "--transport", "http", "--max-sessions-per-token", "5", env=env) as s:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=120, limits=limits) as http:
            statuses: list[int] = []

            async def one() -> None:
                statuses.append((await _open_session(http, s.url, ALICE)).status_code)

            async with anyio.create_task_group() as tg:
                for _ in range(150):
                    tg.start_soon(one)
    assert statuses.count(200) == 5
    assert statuses.count(429) == 145


async def test_one_token_cannot_take_every_sse_connection_and_a_closed_one_frees_its_place(tmp_path: Path) -> None:
    env = clean_env(OFFPROMPT_AUTH_TOKEN=f"{ALICE},{BOB}")
    with offprompt_serving(tmp_path / "data", "--transport", "sse", "--max-sessions-per-token", "3", env=env) as s:
        async with httpx.AsyncClient(timeout=30) as http, AsyncExitStack() as held:

            async def connect(token: str) -> httpx.Response:
                headers = {"Authorization": f"Bearer {token}"}
                return await held.enter_async_context(http.stream("GET", s.url, headers=headers))

            opened = [await connect(ALICE) for _ in range(3)]
            assert [r.status_code for r in opened] == [200, 200, 200]
            refused = await connect(ALICE)
            assert refused.status_code == 429
            assert "already holds 3 open SSE connections" in (await refused.aread()).decode()
            assert "max_sessions_per_token" in refused.text
            assert (await connect(BOB)).status_code == 200  # other tokens are unaffected
            await opened[0].aclose()  # Alice closes one: its place is free again
            with anyio.fail_after(30):
                for _ in range(100):  # the server sees the close within moments
                    again = await connect(ALICE)
                    if again.status_code != 429:
                        break
                    await anyio.sleep(0.2)
            assert again.status_code == 200


# -- big answers over HTTP ------------------------------------------------------------------------------------------


@asynccontextmanager
async def sse_session_for(url: str) -> AsyncIterator[ClientSession]:
    """A `ClientSession` over legacy SSE, initialized."""
    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.mark.node
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_big_stored_outputs_read_back_over_http_in_answers_under_1_mib(tmp_path: Path, transport: str) -> None:
    # The SDK's clients refuse a server-sent event over 1 MiB (over SSE that ends the session); a 1.6 MB text and a
    # ~1 MB image broke them.
    from ..support import node_peer

    root = tmp_path / "files"
    root.mkdir()
    text = "".join(f"{i:07d} a line of the big log, with some words in it to read back\n" for i in range(25000))
    assert len(text.encode()) > 1_600_000
    (root / "big.log").write_text(text)
    picture = noise_png(580, 580)
    assert 950_000 < len(picture) < 1_100_000
    (root / "shot.png").write_bytes(picture)
    config = tmp_path / "offprompt.json"
    fs = node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(root))
    config.write_text(json.dumps({"mcpServers": {"fs": fs}}))
    with offprompt_serving(tmp_path / "data", "--config", str(config), "--transport", transport) as served:
        opened = session_for(served.url) if transport == "http" else sse_session_for(served.url)
        async with opened as session:
            ref = (await session.call_tool("fs__read_text_file", {"path": str(root / "big.log")})).meta
            assert ref is not None
            memory_name, namespace = ref["offprompt"]["memory_name"], ref["offprompt"]["artifact_namespace"]
            templates = (await session.list_resource_templates()).resource_templates
            window_template = f"memory://{memory_name}/{{artifact_namespace}}/{{item}}{{?offset}}"
            assert window_template in [t.uri_template for t in templates]
            # The whole namespace: each item's first window; the text is then read on window by window.
            first = await session.read_resource(f"memory://{memory_name}/{namespace}")
            assert first.contents[0].meta is not None
            parts = [first.contents[0].text]  # type: ignore[union-attr]
            next_uri = first.contents[0].meta["offprompt"]["next_uri"]
            windows = 1
            while next_uri is not None:
                page = await session.read_resource(next_uri)
                assert page.contents[0].meta is not None
                parts.append(page.contents[0].text)  # type: ignore[union-attr]
                next_uri = page.contents[0].meta["offprompt"]["next_uri"]
                windows += 1
            assert "".join(parts) == text
            assert windows >= 2
            # memory_load of a big window of it fits too.
            load = await session.call_tool(
                "memory_load", {"artifact_namespace": namespace, "max_tokens": 20000, "offset": 0}
            )
            assert not load.is_error
            # An image too big for one answer: downscaled to fit, saying so and how to get it whole.
            shot = (await session.call_tool("fs__read_media_file", {"path": str(root / "shot.png")})).meta
            assert shot is not None
            image_ns = shot["offprompt"]["artifact_namespace"]
            loaded = await session.call_tool("memory_load", {"artifact_namespace": image_ns})
            assert not loaded.is_error
            smaller = loaded.content[0]
            assert isinstance(smaller, mt.ImageContent)
            shown = PIL.Image.open(io.BytesIO(base64.b64decode(smaller.data)))
            assert 0 < shown.width < 580
            assert shown.height == pytest.approx(shown.width, abs=1)  # the picture's shape kept
            assert len(smaller.data) < 1_000_000
            said = loaded.content[1]
            assert isinstance(said, mt.TextContent)
            message = said.text
            assert "downscaled" in message
            assert "580x580" in message
            assert f"{len(picture):,} bytes" in message
            assert f"offprompt memory cat {image_ns} --item 0 -o FILE" in message
            assert "over stdio" in message
            with pytest.raises(MCPError) as caught:
                await session.read_resource(f"memory://{memory_name}/{image_ns}/0")
            assert f"{len(picture):,} bytes" in str(caught.value)
            # The session still works after both refusals.
            assert not (await session.call_tool("memory_list", {})).is_error
