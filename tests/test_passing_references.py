"""A stored output handed to another tool as `⟦memory:NS/ITEM⟧`, so the model never reads it back.

The downstreams are tests/servers/recording.py, real MCP servers run as subprocesses, which write down the exact
arguments of every call: what the receiving tool got is read from there, never from offprompt's own account.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer

from offprompt.arguments import Receiver, fill
from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.config import parse_config
from offprompt.errors import ReferenceRefusedError
from offprompt.memory.catalog import Origin
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.middleware import wrap
from offprompt.proxy.downstreams import Proxy
from offprompt.secrets import HANDLE, Redactor
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens
from tests.secrets.corpus import GHP, RSA_KEY
from tests.serve.test_transports import ALICE, BOB, local_url, session_for
from tests.serving import Served, tokens_serving
from tests.support import REPO, meta, node_peer, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio

RECORDING = REPO / "tests" / "servers" / "recording.py"
RECORDER = REPO / "tests" / "servers" / "recorder.py"
#: A stored text as a code file is: many lines, a fake GitHub token on one of them.
BIG = "".join(
    f"def handler_{n}(request):\n    return respond(request, code={n})\n" if n != 7 else f'TOKEN = "{GHP}"\n'
    for n in range(400)
)
DATA = {"items": [{"name": f"item-{n}", "size": n, "tags": ["a", "b"]} for n in range(120)], "total": 120}


def config(tmp_path: Path, rec: dict[str, Any] | None = None, other: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two recording servers, `rec` (its `show` sensitive) and `other`, and `raw`, which speaks JSON-RPC by hand
    and writes down the arguments exactly as they arrived (an SDK server would parse a JSON string for an
    object parameter itself, hiding whether offprompt typed it)."""

    def server(name: str, extra: dict[str, Any] | None) -> dict[str, Any]:
        return {"command": sys.executable, "args": [str(RECORDING), str(tmp_path / f"{name}.jsonl")], **(extra or {})}

    return {
        "offprompt": {"threshold_tokens": 300, "blob_threshold_bytes": 1000},
        "mcpServers": {
            "rec": server("rec", {"tools": {"show": {"off_prompt": "always"}}, **(rec or {})}),
            "other": server("other", other),
            "raw": {"command": sys.executable, "args": [str(RECORDER), str(tmp_path / "raw.jsonl")]},
        },
    }


def recorded(tmp_path: Path, server: str) -> list[dict[str, Any]]:
    """What a server was called with: `{"tool", "arguments"}` per call (`raw`: the arguments themselves)."""
    record = tmp_path / f"{server}.jsonl"
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


@pytest.fixture
def proxied(memory: TaskMemory, tmp_path: Path) -> Any:
    """A client of offprompt (in process: the SDK path) in front of the two servers, with the config given."""

    @asynccontextmanager
    async def connect(**servers: dict[str, Any]) -> AsyncIterator[Client]:
        loaded = parse_config(config(tmp_path, **servers))
        proxy = Proxy(loaded.servers)
        async with proxy.running(), Client(build_server(memory, proxy, loaded.settings)) as client:
            yield client

    return connect


async def stored(client: Client | ClientSession, tool: str, **arguments: Any) -> str:
    """Call a tool whose result is stored; the reference it answers with."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    token = str(meta(result)["pass_as"])
    assert token in text_of(result)  # the model learns the token from the reference itself
    return token


async def test_a_stored_text_reaches_a_string_argument_byte_exact_and_its_part_too(
    proxied: Any, tmp_path: Path
) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__echo", text=BIG)
        answer = await client.call_tool("rec__echo", {"text": token})
        assert not answer.is_error, text_of(answer)
        assert recorded(tmp_path, "rec")[-1]["arguments"] == {"text": BIG}  # the token's value, handle put back

        part = token.replace("⟧", " lines=8-10⟧")
        await client.call_tool("rec__echo", {"text": f"before\n{part}after"})
        lines = BIG.splitlines(keepends=True)
        assert recorded(tmp_path, "rec")[-1]["arguments"] == {"text": "before\n" + "".join(lines[7:10]) + "after"}


async def test_a_stored_json_fills_an_object_argument_and_a_selection_picks_a_part(
    proxied: Any, tmp_path: Path
) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__echo", text=json.dumps(DATA, indent=1))
        await client.call_tool("raw__post", {"body": token})
        assert recorded(tmp_path, "raw")[-1] == {"body": DATA}  # an object on the wire, not its text
        await client.call_tool("raw__post", {"body": token.replace("⟧", " select=.items[3]⟧")})
        assert recorded(tmp_path, "raw")[-1] == {"body": DATA["items"][3]}
        await client.call_tool("rec__echo", {"text": token.replace("⟧", " select=.items[3].name⟧")})
        assert recorded(tmp_path, "rec")[-1]["arguments"] == {"text": "item-3"}  # a string output, itself
        calls = len(recorded(tmp_path, "raw"))
        refused = await client.call_tool("raw__post", {"body": token.replace("⟧", " select=.items[]⟧")})
        assert refused.is_error
        assert "wrap the expression in [ ]" in text_of(refused)
        assert len(recorded(tmp_path, "raw")) == calls


async def test_a_selection_of_a_stored_table_picks_from_its_records(proxied: Any, tmp_path: Path) -> None:
    """A CSV text's `select=` runs over its rows as records, typed (sizes as numbers), like memory_select."""
    table = "name,size_kb\n" + "libc6,12986\nopenjdk-17-jdk,9\ngit,41437\ncurl,500\n" * 60
    async with proxied() as client:
        token = await stored(client, "rec__echo", text=table)
        big = token.replace("⟧", " select=[.[] | select(.size_kb > 1000) | .name] | unique⟧")
        answer = await client.call_tool("raw__post", {"body": big})
        assert not answer.is_error, text_of(answer)
        assert recorded(tmp_path, "raw")[-1] == {"body": ["git", "libc6"]}


async def test_a_stored_image_goes_only_where_the_schema_asks_for_base64(proxied: Any, tmp_path: Path) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__picture", size=5000)
        uploaded = await client.call_tool("rec__upload", {"name": "shot.png", "data": token})
        assert text_of(uploaded) == "uploaded 5000 bytes"
        sent = base64.b64decode(recorded(tmp_path, "rec")[-1]["arguments"]["data"])
        assert sent.startswith(b"\x89PNG")
        assert len(sent) == 5000
        calls = len(recorded(tmp_path, "rec"))
        for text in (token, f"see {token}"):
            refused = await client.call_tool("rec__echo", {"text": text})
            assert refused.is_error
            assert "base64" in text_of(refused)
        assert len(recorded(tmp_path, "rec")) == calls


async def test_a_sensitive_output_goes_to_its_own_server_only_unless_it_shares(proxied: Any, tmp_path: Path) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__show", text=BIG)  # "off_prompt": "always"
        refused = await client.call_tool("other__echo", {"text": token})
        assert refused.is_error
        assert '"share_with": ["other"]' in text_of(refused)
        assert recorded(tmp_path, "other") == []  # nothing reached the other server
        await client.call_tool("rec__echo", {"text": token})
        assert recorded(tmp_path, "rec")[-1]["arguments"] == {"text": BIG}
    async with proxied(rec={"share_with": ["other"]}) as client:
        token = await stored(client, "rec__show", text=BIG)
        await client.call_tool("other__echo", {"text": token})
        assert recorded(tmp_path, "other")[-1]["arguments"] == {"text": BIG}  # its secrets shared too


async def test_an_ordinary_output_goes_anywhere_with_its_secrets_left_as_handles_unless_flows_to_narrows_it(
    proxied: Any, tmp_path: Path
) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__echo", text=BIG)
        answer = await client.call_tool("other__echo", {"text": token})
        got = recorded(tmp_path, "other")[-1]["arguments"]["text"]
        assert GHP not in got
        assert len(HANDLE.findall(got)) == 1  # rec does not share its secrets with other: the handle stays
        assert HANDLE.sub(GHP, got) == BIG
        assert "1 secret handle(s)" in text_of(answer)
    async with proxied(rec={"flows_to": []}) as client:
        token = await stored(client, "rec__echo", text=BIG)
        calls = len(recorded(tmp_path, "other"))
        refused = await client.call_tool("other__echo", {"text": token})
        assert refused.is_error
        assert '"flows_to"' in text_of(refused)
        assert len(recorded(tmp_path, "other")) == calls


async def test_a_reference_that_cannot_be_filled_fails_the_call_and_says_why(proxied: Any, tmp_path: Path) -> None:
    async with proxied(other={"max_argument_bytes": 1000}) as client:
        token = await stored(client, "rec__echo", text=BIG)
        namespace = token.removeprefix("⟦memory:").split("/")[0]
        cases = {
            "⟦memory:zzzzzzzzzzzzz/0⟧": "memory_list",
            f"⟦memory:{namespace}⟧": "⟦memory:NAMESPACE/ITEM⟧",
            f"⟦memory:{namespace}/0 lines=900-950⟧": "lines",
            token: "max_argument_bytes",
        }
        for text, said in cases.items():
            refused = await client.call_tool("other__echo", {"text": text})
            assert refused.is_error, text
            assert said in text_of(refused), text_of(refused)
        assert recorded(tmp_path, "other") == []


async def test_memory_list_shows_where_an_output_went_and_the_receiving_call_keeps_the_token(
    proxied: Any, tmp_path: Path
) -> None:
    async with proxied() as client:
        token = await stored(client, "rec__echo", text=BIG)
        namespace = token.removeprefix("⟦memory:").split("/")[0]
        again = await client.call_tool("rec__echo", {"text": token.replace("⟧", " lines=1-200⟧")})
        listed = meta(await client.call_tool("memory_list", {}))["namespaces"]
        by_namespace = {row["artifact_namespace"]: row for row in listed}
        flows = by_namespace[namespace]["passed_to"]
        assert [(f["tool"], f["part"]) for f in flows] == [("rec.echo", "item 0, lines 1-200")]
        second = by_namespace[meta(again)["artifact_namespace"]]  # the receiving call's own result, stored
        assert second["arguments"] == {"text": token.replace("⟧", " lines=1-200⟧")}  # the token, not the value


async def test_on_the_fast_lane_a_reference_is_filled_and_a_sensitive_one_refused(tmp_path: Path) -> None:
    (tmp_path / "offprompt.json").write_text(json.dumps(config(tmp_path)))
    command, *args = offprompt_command(
        "serve", "--config", str(tmp_path / "offprompt.json"), "--data-dir", str(tmp_path / "data")
    )
    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    with (tmp_path / "stderr.log").open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # 2025-11-25 over stdio: proxied calls take the fast lane
            token = await stored(session, "rec__echo", text=BIG)
            await session.call_tool("other__echo", {"text": token.replace("⟧", " lines=1-7⟧")})
            assert recorded(tmp_path, "other")[-1]["arguments"] == {"text": "".join(BIG.splitlines(True)[:7])}
            await session.call_tool("raw__post", {"body": await stored(session, "rec__echo", text=json.dumps(DATA))})
            assert recorded(tmp_path, "raw")[-1] == {"body": DATA}
            sensitive = await stored(session, "rec__show", text=BIG)
            calls = len(recorded(tmp_path, "other"))
            refused = await session.call_tool("other__echo", {"text": sensitive})
            assert refused.is_error
            assert len(recorded(tmp_path, "other")) == calls


async def test_a_wrapped_server_s_own_tools_receive_its_stored_outputs(memory: TaskMemory) -> None:
    server = MCPServer("app")
    received: list[Any] = []

    @server.tool()
    def export() -> str:
        return BIG

    @server.tool()
    def count_lines(text: str) -> int:
        received.append(text)
        return text.count("\n")

    wrap(server, memory=memory, threshold_tokens=300)
    async with Client(server) as client:
        await client.list_tools()  # a client lists before it calls: the schemas come from there
        token = await stored(client, "export")
        answer = await client.call_tool("count_lines", {"text": token})
        assert not answer.is_error, text_of(answer)
    assert received == [BIG]


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    directory = tmp_path_factory.mktemp("reference-tokens")
    with tokens_serving(directory, config(directory), (ALICE, BOB)) as served:
        yield served, directory


async def test_one_tokens_reference_is_refused_for_another(token_server: tuple[Served, Path]) -> None:
    served, directory = token_server
    async with session_for(local_url(served), ALICE) as alice:
        token = await stored(alice, "rec__echo", text=BIG)
    async with session_for(local_url(served), BOB) as bob:
        calls = len(recorded(directory, "other"))
        refused = await bob.call_tool("other__echo", {"text": token})
        assert refused.is_error
        assert "another token" in text_of(refused)
        assert len(recorded(directory, "other")) == calls
    async with session_for(local_url(served), ALICE) as alice:
        await alice.call_tool("rec__echo", {"text": token})
    assert recorded(directory, "rec")[-1]["arguments"] == {"text": BIG}


# -- the substitution itself, for any text, JSON and line range ---------------------------------------------------


@pytest.fixture(scope="module")
def property_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TaskMemory]:
    memory = TaskMemory.open(MemorySettings(name="p", data_dir=tmp_path_factory.mktemp("p")))
    yield memory
    memory.close()


def _receiver(schema: dict[str, Any] | None = None) -> Receiver:
    return Receiver("s", "t", "", schema, None, {}, {})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=2000).filter(str.strip), first=st.integers(1, 60), count=st.integers(0, 60))
def test_a_filled_text_or_line_range_equals_the_stored_output(
    property_memory: TaskMemory, text: str, first: int, count: int
) -> None:
    redactor = Redactor(None)
    ref = property_memory.store([TextArtifact(value=text)], tool="s.t", origin=Origin("s", sensitive=False))
    token = f"⟦memory:{ref.namespace}/0⟧"
    whole = fill({"a": token, "b": f"<{token}>"}, _receiver(), redactor, property_memory).arguments
    stored = property_memory.payload(ref.namespace, 0).decode()  # what was stored (a text may be normalised)
    assert whole == {"a": stored, "b": f"<{stored}>"}
    rows = re.findall(r"[^\n]*\n|[^\n]+\Z", stored)  # lines as memory_load and memory_grep count them
    spec = f"{first}-{first + count}"
    try:
        part = fill({"a": token.replace("⟧", f" lines={spec}⟧")}, _receiver(), redactor, property_memory).arguments
    except ReferenceRefusedError:
        assert first > len(rows)  # only a range that starts past the end is refused
    else:
        assert part == {"a": "".join(rows[first - 1 : first + count])}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.dictionaries(st.text(min_size=1, max_size=8), JSON, min_size=1, max_size=5))
def test_a_filled_json_argument_equals_the_stored_json(property_memory: TaskMemory, value: dict[str, Any]) -> None:
    text = json.dumps(value)
    ref = property_memory.store([JsonArtifact(value=value, text=text)], tool="s.t", origin=Origin("s", sensitive=False))
    token = f"⟦memory:{ref.namespace}/0⟧"
    schema = {"type": "object", "properties": {"body": {"type": "object"}, "raw": {"type": "string"}}}
    filled = fill({"body": token, "raw": token}, _receiver(schema), Redactor(None), property_memory).arguments
    assert filled == {"body": value, "raw": text}


# -- with a real filesystem server ------------------------------------------------------------------------------


@pytest.mark.node
async def test_a_5_mb_file_read_through_server_filesystem_is_written_back_byte_exact_in_under_1000_tokens(
    memory: TaskMemory, tmp_path: Path
) -> None:
    root = (tmp_path / "files").resolve()
    root.mkdir()
    source = root / "big.py"
    block = BIG.replace(f'TOKEN = "{GHP}"\n', "")
    source.write_text(f'GITHUB_TOKEN = "{GHP}"\n' + block * (5_000_000 // len(block) + 1))
    data = {"name": "app", "dependencies": {f"pkg-{n}": f"^{n}.0.0" for n in range(3000)}, "scripts": {"t": "x"}}
    (root / "package.json").write_text(json.dumps(data, indent=2))
    loaded = parse_config(
        {"mcpServers": {"fs": node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(root))}}
    )
    async with Proxy(loaded.servers).running() as proxy, Client(build_server(memory, proxy, loaded.settings)) as client:
        reference = await client.call_tool("fs__read_text_file", {"path": str(source)})
        token = meta(reference)["pass_as"]
        arguments = {"path": str(root / "copy.py"), "content": token}
        written = await client.call_tool("fs__write_file", arguments)
        assert not written.is_error, text_of(written)
        seen = count_tokens(text_of(reference)) + count_tokens(json.dumps(arguments)) + count_tokens(text_of(written))
        assert (root / "copy.py").read_bytes() == source.read_bytes()  # the token's value went back in clear
        assert seen < 1000, seen

        part = token.replace("⟧", " lines=120-480⟧")
        await client.call_tool("fs__write_file", {"path": str(root / "part.py"), "content": part})
        lines = source.read_text().splitlines(keepends=True)
        assert (root / "part.py").read_text() == "".join(lines[119:480])

        package = meta(await client.call_tool("fs__read_text_file", {"path": str(root / "package.json")}))["pass_as"]
        selected = package.replace("⟧", " select=.dependencies⟧")
        await client.call_tool("fs__write_file", {"path": str(root / "deps.json"), "content": selected})
        assert json.loads((root / "deps.json").read_text()) == data["dependencies"]


def test_a_stored_json_holding_a_private_key_goes_out_as_valid_json_with_the_key_in_it(
    property_memory: TaskMemory,
) -> None:
    """A key found in a parsed value (structuredContent: real newlines) and one found in JSON text (escaped):
    put back, the JSON still parses and holds the key, in a string argument and in an object one."""
    redactor = Redactor(None)
    value = {"type": "service_account", "private_key": RSA_KEY}
    schema = {"type": "object", "properties": {"body": {"type": "object"}, "raw": {"type": "string"}}}
    parsed = redactor.redact_json(value, "", "s")
    text = json.dumps(value, indent=1)
    in_text = redactor.redact_text(text, "", "s")
    for stored in (JsonArtifact(value=parsed), JsonArtifact(value=json.loads(in_text), text=in_text)):
        assert RSA_KEY not in (stored.text or "")  # it was redacted before it was stored
        ref = property_memory.store([stored], tool="s.t", origin=Origin("s", sensitive=False))
        token = f"⟦memory:{ref.namespace}/0⟧"
        filled = fill({"body": token, "raw": token}, _receiver(schema), redactor, property_memory).arguments
        assert filled is not None
        assert filled["body"] == value
        assert json.loads(filled["raw"]) == value
        picked = fill(
            {"raw": token.replace("⟧", " select=.private_key⟧")}, _receiver(schema), redactor, property_memory
        )
        assert picked.arguments == {"raw": RSA_KEY}


def test_a_selection_counts_toward_max_argument_bytes_and_lines_count_as_memory_load_does(
    property_memory: TaskMemory,
) -> None:
    big = {"rows": [{"n": n, "text": "x" * 100} for n in range(100)]}
    ref = property_memory.store(
        [JsonArtifact(value=big, text=json.dumps(big))], tool="s.t", origin=Origin("s", sensitive=False)
    )
    schema = {"type": "object", "properties": {"body": {"type": "object"}}}
    small = Receiver("s", "t", "", schema, 5000, {}, {})
    with pytest.raises(ReferenceRefusedError, match="max_argument_bytes"):
        fill({"body": f"⟦memory:{ref.namespace}/0 select=.⟧"}, small, Redactor(None), property_memory)
    crlf = property_memory.store(
        [TextArtifact(value="progress 10%\rprogress 90%\ndone\n")], tool="s.t", origin=Origin("s", sensitive=False)
    )
    part = fill({"a": f"⟦memory:{crlf.namespace}/0 lines=2-2⟧"}, _receiver(), Redactor(None), property_memory)
    assert part.arguments == {"a": "done\n"}  # a "\r" alone ends no line, as memory_grep counts them
