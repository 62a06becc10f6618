"""Secret handles end to end: what the model sees, what a real downstream receives, what memory reads back.

The downstream is tests/servers/recording.py, a real MCP server run as a subprocess, which writes down the
arguments of every call it gets.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.middleware import wrap
from offprompt.proxy.downstreams import Proxy
from offprompt.secrets import HANDLE
from offprompt.serve.app import build_server
from tests.secrets.corpus import AWS_ID, AWS_SECRET, GHP, PG_PASSWORD, RSA_KEY
from tests.serve.test_transports import ALICE, BOB, local_url, session_for
from tests.serving import Served, tokens_serving
from tests.support import REPO, meta, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio

RECORDING = REPO / "tests" / "servers" / "recording.py"
ENV_FILE = (
    f"GITHUB_TOKEN={GHP}\nAWS_ACCESS_KEY_ID={AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    f"DATABASE_URL=postgres://app:{PG_PASSWORD}@db:5432/shop\n"
)
VALUES = {
    "github-token": GHP,
    "aws-access-key": AWS_ID,
    "aws-secret-key": AWS_SECRET,
    "connection-password": PG_PASSWORD,
}


def config(record: Path, secrets: str = "redact", **settings: Any) -> dict[str, Any]:
    rec = {
        "command": sys.executable,
        "args": [str(RECORDING), str(record)],
        "secrets": secrets,
        "tools": {"show": {"secrets": "pass"}},
    }
    return {"offprompt": settings, "mcpServers": {"rec": rec}}


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


def everything(result: mt.CallToolResult) -> str:
    return result.model_dump_json(by_alias=True)


def handles_in(text: str) -> dict[str, str]:
    """kind → handle, for each handle in the text."""
    return {match.group(0).rstrip("⟧").split(" ")[1]: match.group(0) for match in HANDLE.finditer(text)}


def recorded(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def redacted(text: str, handles: dict[str, str]) -> str:
    for kind, value in VALUES.items():
        text = text.replace(value, handles[kind])
    return text


def assert_no_values(answer: str) -> None:
    for value in (*VALUES.values(), RSA_KEY.splitlines()[1]):
        assert value not in answer


async def test_on_the_fast_lane_the_model_gets_handles_and_the_downstream_gets_values(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    (tmp_path / "offprompt.json").write_text(json.dumps(config(record)))
    command, *args = offprompt_command(
        "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
    )
    params = StdioServerParameters(command=command, args=[*args, "--log-level", "DEBUG"], env=subprocess_env())
    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # 2025-11-25: proxied calls take the fast lane
            shown = await session.call_tool("rec__echo", {"text": ENV_FILE})
            handles = handles_in(text_of(shown))
            assert set(handles) == set(VALUES)
            assert text_of(shown) == redacted(ENV_FILE, handles)
            assert_no_values(everything(shown))

            # The same value reads as the same handle; a handle sent back is the value downstream.
            again = await session.call_tool("rec__echo", {"text": handles["github-token"]})
            assert text_of(again) == handles["github-token"]
            assert recorded(record)[-1]["arguments"] == {"text": GHP}

            used = await session.call_tool(
                "rec__use",
                {
                    "url": "https://api.github.com/user",
                    "headers": {"Authorization": f"Bearer {handles['github-token']}"},
                    "notes": [f"db password {handles['connection-password']}", "plain"],
                },
            )
            assert not used.is_error, text_of(used)
            assert recorded(record)[-1]["arguments"] == {
                "url": "https://api.github.com/user",
                "headers": {"Authorization": f"Bearer {GHP}"},
                "notes": [f"db password {PG_PASSWORD}", "plain"],
            }

            calls = len(recorded(record))
            refused = await session.call_tool(
                "rec__use", {"url": "x", "headers": {}, "notes": ["⟦secret:zzzzzzzzzz github-token⟧"]}
            )
            assert refused.is_error
            assert "⟦secret:zzzzzzzzzz github-token⟧" in text_of(refused)
            assert len(recorded(record)) == calls  # nothing was forwarded

            passed = await session.call_tool("rec__show", {"text": ENV_FILE})  # "secrets": "pass"
            assert text_of(passed) == ENV_FILE

            with pytest.raises(MCPError) as failed:  # a downstream's protocol error, relayed on the fast lane
                await session.call_tool("rec__refuse", {"text": ENV_FILE})
            assert failed.value.message == f"rejected: {redacted(ENV_FILE, handles)}"
    vault = tmp_path / "data" / "default" / "secrets.sqlite3"
    assert stat.S_IMODE(vault.stat().st_mode) == 0o600
    assert_no_values(errlog.read_text())  # DEBUG logging included


async def test_a_downstream_error_that_cannot_be_checked_for_secrets_is_answered_without_its_text(
    tmp_path: Path,
) -> None:
    record = tmp_path / "calls.jsonl"
    (tmp_path / "offprompt.json").write_text(json.dumps(config(record)))
    (tmp_path / "data" / "default" / "secrets.sqlite3").mkdir(parents=True)  # the secrets table cannot open
    command, *args = offprompt_command(
        "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
    )
    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    with (tmp_path / "stderr.log").open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # the fast lane
            with anyio.fail_after(30), pytest.raises(MCPError) as failed:  # answered, not left hanging
                await session.call_tool("rec__refuse", {"text": ENV_FILE})
    assert "could not be checked for secrets" in failed.value.message
    assert_no_values(failed.value.message)
    assert_no_values((tmp_path / "stderr.log").read_text())


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


@pytest.fixture
async def client(memory: TaskMemory, record: Path) -> Any:
    loaded = parse_config(config(record, threshold_tokens=300))
    proxy = Proxy(loaded.servers)
    async with proxy.running(), Client(build_server(memory, proxy, loaded.settings)) as client:
        yield client


async def test_on_the_sdk_path_results_carry_handles_and_arguments_get_values(client: Client, record: Path) -> None:
    shown = await client.call_tool("rec__echo", {"text": ENV_FILE})
    handles = handles_in(text_of(shown))
    assert text_of(shown) == redacted(ENV_FILE, handles)
    used = await client.call_tool(
        "rec__use", {"url": "u", "headers": {"X-Key": handles["aws-secret-key"]}, "notes": []}
    )
    assert not used.is_error
    assert recorded(record)[-1]["arguments"]["headers"] == {"X-Key": AWS_SECRET}
    refused = await client.call_tool("rec__echo", {"text": "⟦secret:aaaaaaaaaa password⟧"})
    assert refused.is_error
    assert "not a secret handle" in text_of(refused)


async def test_a_stored_result_holds_handles_in_every_read_back(
    client: Client, memory: TaskMemory, record: Path
) -> None:
    handles = handles_in(text_of(await client.call_tool("rec__echo", {"text": ENV_FILE + RSA_KEY})))
    lines = [f"2026-11-30T12:{i // 60:02d}:{i % 60:02d} INFO deploy step {i} ok" for i in range(120)]
    lines[10] = f"export GITHUB_TOKEN={GHP}"
    lines[50] = f"aws_secret_access_key = {AWS_SECRET}"
    lines[90] = f"connecting to postgres://app:{PG_PASSWORD}@db:5432/shop"
    lines[100] = RSA_KEY
    big = "\n".join(lines)
    stored = await client.call_tool("rec__echo", {"text": big})
    namespace = meta(stored)["artifact_namespace"]  # over 300 tokens: stored off the prompt
    expected = redacted(big, handles).replace(RSA_KEY, handles["private-key"])

    parts, offset = [], 0
    while offset is not None:
        window = await client.call_tool(
            "memory_load", {"artifact_namespace": namespace, "offset": offset, "max_tokens": 200}
        )
        assert_no_values(everything(window))
        block = window.content[0]  # the window's text alone; content[1] says where it sits
        assert isinstance(block, mt.TextContent)
        parts.append(block.text)
        offset = meta(window)["next_offset"]
    assert "".join(parts) == expected  # byte-exact to the redacted text

    grep = await client.call_tool("memory_grep", {"pattern": "GITHUB_TOKEN|aws_secret|postgres|private-key⟧"})
    assert len(meta(grep)["matches"]) == 4
    assert handles["github-token"] in text_of(grep)
    assert_no_values(everything(grep))

    assert memory.text.wait_indexed(timeout=300)  # type: ignore[attr-defined]
    query = await client.call_tool("memory_query", {"query": "github token export", "top_k": 10})
    assert meta(query)["results"]
    assert_no_values(everything(query))

    outline = await client.call_tool("memory_outline", {"artifact_namespace": namespace})
    assert "export GITHUB_TOKEN=⟦secret:" in text_of(outline)  # the log's templates: its rare lines as they are
    assert_no_values(everything(outline))

    services = [{"service": f"svc-{i}", "region": "eu-west-1", "replicas": i % 4 + 1} for i in range(40)]
    services[7] |= {"env": {"GITHUB_TOKEN": GHP, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}}
    stored_json = await client.call_tool("rec__echo", {"text": json.dumps(services)})
    json_namespace = meta(stored_json)["artifact_namespace"]
    for expression in (".[7].env", "."):
        selected = await client.call_tool(
            "memory_select", {"artifact_namespace": json_namespace, "expression": expression}
        )
        assert not selected.is_error, text_of(selected)
        assert handles["github-token"] in text_of(selected)
        assert_no_values(everything(selected))

    listed = await client.call_tool("memory_list", {})  # the call's arguments are shown, and were redacted
    assert namespace in text_of(listed)
    assert_no_values(everything(listed))
    resource = await client.read_resource(f"memory://test/{namespace}")
    assert_no_values(resource.model_dump_json())


async def test_a_proxied_resource_prompt_and_error_show_handles(client: Client, record: Path) -> None:
    (record.parent / "app.env").write_text(ENV_FILE)
    resource = await client.read_resource("files://app.env")
    block = resource.contents[0]
    assert isinstance(block, mt.TextResourceContents)
    handles = handles_in(block.text)
    assert block.text == redacted(ENV_FILE, handles)
    assert_no_values(resource.model_dump_json())

    prompt = await client.get_prompt("rec__review", {"name": "app.env"})
    assert_no_values(prompt.model_dump_json())
    message = prompt.messages[0].content
    assert isinstance(message, mt.TextContent)
    assert message.text == f"Review this config file:\n{redacted(ENV_FILE, handles)}"  # the same handles

    with pytest.raises(MCPError) as failed:
        await client.call_tool("rec__refuse", {"text": ENV_FILE})
    assert failed.value.message == f"rejected: {redacted(ENV_FILE, handles)}"
    assert_no_values(json.dumps(failed.value.error.model_dump(mode="json")))

    used = await client.call_tool("rec__use", {"url": "u", "headers": {"X": handles["github-token"]}, "notes": []})
    assert not used.is_error  # a handle from a resource is as usable as one from a tool
    assert recorded(record)[-1]["arguments"]["headers"] == {"X": GHP}


async def test_a_server_whose_secrets_pass_shows_its_resources_and_prompts_whole(
    memory: TaskMemory, record: Path
) -> None:
    (record.parent / "app.env").write_text(ENV_FILE)
    loaded = parse_config(config(record, secrets="pass"))
    async with Proxy(loaded.servers).running() as proxy, Client(build_server(memory, proxy, loaded.settings)) as client:
        resource = (await client.read_resource("files://app.env")).contents[0]
        assert isinstance(resource, mt.TextResourceContents)
        assert resource.text == ENV_FILE
        message = (await client.get_prompt("rec__review", {"name": "app.env"})).messages[0].content
        assert isinstance(message, mt.TextContent)
        assert message.text == f"Review this config file:\n{ENV_FILE}"


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    directory = tmp_path_factory.mktemp("secret-tokens")
    record = directory / "calls.jsonl"
    with tokens_serving(directory, config(record), (ALICE, BOB)) as served:
        yield served, record


async def test_one_tokens_handle_does_not_resolve_for_another(token_server: tuple[Served, Path]) -> None:
    served, record = token_server
    url = local_url(served)
    async with session_for(url, ALICE) as alice:
        alices = handles_in(text_of(await alice.call_tool("rec__echo", {"text": ENV_FILE})))["github-token"]
    async with session_for(url, BOB) as bob:
        calls = len(recorded(record))
        refused = await bob.call_tool("rec__echo", {"text": alices})
        assert refused.is_error
        assert "another token" in text_of(refused)
        assert len(recorded(record)) == calls
        bobs = handles_in(text_of(await bob.call_tool("rec__echo", {"text": ENV_FILE})))["github-token"]
        assert bobs != alices  # the same value, a handle of Bob's own
    async with session_for(url, ALICE) as alice:
        await alice.call_tool("rec__echo", {"text": alices})
        assert recorded(record)[-1]["arguments"] == {"text": GHP}


async def test_a_wrapped_server_shows_handles_and_its_tools_get_values(memory: TaskMemory) -> None:
    server = MCPServer("app")
    received: list[str] = []

    @server.tool()
    def read_env() -> str:
        return ENV_FILE

    @server.tool()
    def reveal() -> str:
        return ENV_FILE

    @server.tool()
    def deploy(token: str) -> str:
        received.append(token)
        return "deployed"

    wrap(server, memory=memory, pass_secrets=["reveal"])
    async with Client(server) as client:
        shown = text_of(await client.call_tool("read_env", {}))
        handles = handles_in(shown)
        assert shown == redacted(ENV_FILE, handles)
        assert text_of(await client.call_tool("reveal", {})) == ENV_FILE
        assert text_of(await client.call_tool("deploy", {"token": handles["github-token"]})) == "deployed"
    assert received == [GHP]


def test_secrets_are_set_per_server_and_per_tool(tmp_path: Path) -> None:
    loaded = parse_config(config(tmp_path / "r.jsonl"))
    rec = loaded.servers["rec"]
    assert rec.secrets_for("echo") == "redact"  # the default
    assert rec.secrets_for("show") == "pass"
    bad = parse_config({"mcpServers": {"x": {"command": "x", "secrets": "hide"}}})
    assert "x" in bad.problems
    assert re.search(r"secrets.*'redact' or 'pass'", bad.problems["x"])
