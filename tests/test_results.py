"""The one result boundary: what the client gets from a downstream's answer, on every path."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

import offprompt
from offprompt.arguments import Receiver, fill
from offprompt.config import OffPrompt, parse_config
from offprompt.errors import InvalidArgumentError
from offprompt.jsonrpc import dumps
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage import EmbeddingSpec
from offprompt.memory.task_memory import TaskMemory
from offprompt.policy import Thresholds
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.intent import INTENT
from offprompt.results import CallSite, Fetch, ResultBoundary, ResultSettings, model_text
from offprompt.secrets import HANDLE_MARK, Redactor
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

from .secrets.corpus import GHP
from .support import REPO, offprompt_command, subprocess_env, text_of
from .word_hash import WordHashEmbedding  # noqa: F401  (registers the word-hash embedding)

pytestmark = pytest.mark.anyio

MALFORMED = str(REPO / "tests" / "servers" / "malformed.py")
SECRET = "SECRET-7f3k9q2m"  # what tests/servers/malformed.py puts in its malformed result and its noise
CONFIG = {"mcpServers": {"vault": {"command": sys.executable, "args": [MALFORMED], "off_prompt": "always"}}}


def everything(result: object) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True))  # type: ignore[attr-defined]


async def test_a_sensitive_malformed_result_leaks_neither_into_the_answer_nor_the_log(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    config = parse_config(CONFIG)
    caplog.set_level(logging.DEBUG)
    proxy = Proxy(config.servers)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        result = await client.call_tool("vault__reveal", {})
    assert result.is_error
    assert "malformed" in text_of(result)
    assert SECRET not in everything(result)
    assert SECRET not in caplog.text


@asynccontextmanager
async def vault_over_stdio(tmp_path: Path) -> AsyncIterator[tuple[ClientSession, Path]]:
    """A real `offprompt serve` over stdio (the fast lane) in front of the malformed vault, logging at DEBUG."""
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps(CONFIG))
    errlog = tmp_path / "stderr.log"
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    params = StdioServerParameters(command=command, args=[*args, "--log-level", "DEBUG"], env=subprocess_env())
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session, errlog


async def test_a_sensitive_malformed_result_does_not_leak_on_the_fast_lane(tmp_path: Path) -> None:
    async with vault_over_stdio(tmp_path) as (session, errlog):
        result = await session.call_tool("vault__reveal", {})
    assert result.is_error
    assert SECRET not in everything(result)
    assert "not JSON" in errlog.read_text()  # the noise line was seen, and logged by its size
    assert SECRET not in errlog.read_text()


async def test_a_sensitive_tools_own_error_is_stored_not_shown_on_the_fast_lane(tmp_path: Path) -> None:
    async with vault_over_stdio(tmp_path) as (session, _):
        result = await session.call_tool("vault__fail", {})
        assert result.is_error
        assert SECRET not in everything(result)
        assert "vault.fail reported an error" in text_of(result)
        loaded = await session.call_tool("memory_load", {"artifact_namespace": stored_namespace(result)})
    assert f"access denied for {SECRET}" in text_of(loaded)  # the model can still read it, when it must


def test_the_sdk_transports_log_message_sizes_not_messages(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # The SDK's streamable HTTP client logs each message it receives like this (an f-string, at DEBUG).
    logging.getLogger("mcp.client.streamable_http").debug(f"SSE message: {{'result': '{SECRET}'}}")
    assert SECRET not in caplog.text
    assert "SSE message: (" in caplog.text


# -- the boundary itself, in process: a downstream is an async function answering JSON or a model -------------

BIG = "".join(f"line {n}: the build step {n} finished with status ok\n" for n in range(400))  # ~5k tokens


@pytest.fixture
def memory(settings: MemorySettings) -> Iterator[TaskMemory]:
    """A real memory whose vectors come from a word hash: what the boundary does does not depend on the model,
    and closing the memory does not wait for it (these tests also run once per mutant under mutation testing)."""
    memory = TaskMemory.open(replace(settings, embedding=EmbeddingSpec("offprompt-test-word-hash", {"dims": 64})))
    yield memory
    memory.close()


SMALL_SETTINGS = ResultSettings(thresholds=Thresholds(tokens=200, blob_bytes=1000), preview_tokens=0)


def answering(answer: object, seen: list[object] | None = None) -> Fetch:
    async def fetch(arguments: dict[str, Any] | None) -> Any:
        if seen is not None:
            seen.append(arguments)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return fetch


def site(mode: OffPrompt = "auto", **kwargs: Any) -> CallSite:
    return CallSite(server="files", tool="read", mode=mode, **kwargs)


def text_result(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=text)])


def stored_namespace(answer: mt.CallToolResult) -> str:
    return str(answer.meta["offprompt"]["artifact_namespace"])  # type: ignore[index]


async def test_a_small_result_passes_as_it_came_and_offprompts_intent_is_not_forwarded(memory: TaskMemory) -> None:
    seen: list[object] = []
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    arguments = {"path": "a.txt", INTENT: "the errors"}
    got = await boundary.answer(site(arguments=arguments, intent=True), answering(text_result("ok"), seen))
    assert model_text(got) == "ok"
    assert not got.is_error
    assert seen == [{"path": "a.txt"}]
    # A tool whose own schema has an `intent` argument gets it.
    await boundary.answer(site(arguments=arguments, intent=False), answering(text_result("ok"), seen))
    assert seen[-1] == arguments
    # The inline result was counted for `offprompt stats`, by its text's bytes.
    memory.usage.flush()
    (row,) = memory.catalog.usage()
    assert (row.server, row.tool, row.kind, row.count, row.bytes) == ("files", "read", "inline", 2, 4)


async def test_a_large_result_is_stored_for_its_caller_and_the_model_gets_the_reference(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    arguments = {"path": "build.log", INTENT: "failures"}
    call = site(arguments=arguments, intent=True, owner="alice")
    with caplog.at_level(logging.INFO, logger="offprompt.results"):
        answer = await boundary.answer(call, answering(text_result(BIG)))
    namespace = stored_namespace(answer)
    assert f"stored files.read as {namespace}" in caplog.text  # the log names where it went, never what it holds
    assert BIG[:40] not in caplog.text
    text = model_text(answer)
    assert (
        f'Output of "files.read" was stored in memory with memory_name "test" and artifact_namespace "{namespace}"'
        in text
    )
    assert BIG not in text
    record = memory.get(namespace, owner="alice")
    assert (record.tool, record.owner, dict(record.arguments)) == ("files.read", "alice", {"path": "build.log"})
    assert memory.load(namespace, 0, owner="alice").to_text() == BIG
    memory.usage.flush()
    (row,) = memory.catalog.usage()
    assert (row.kind, row.count, row.bytes) == ("stored", 1, len(BIG.encode()))
    assert row.tokens == count_tokens(BIG)
    assert row.model_tokens == count_tokens(text)


async def test_a_sensitive_result_is_stored_however_small_and_shows_nothing_of_itself(memory: TaskMemory) -> None:
    settings = ResultSettings(thresholds=Thresholds(tokens=200), preview_tokens=100, outline_tokens=400)
    boundary = ResultBoundary(memory, settings)
    call = site("always", arguments={"k": 1, INTENT: "the password"}, intent=True)
    assert boundary.intent_of(call) is None
    document = "# Credentials\n\nthe vault opens with the word plover\n\n## Other\n\nmore text here\n"
    answer = await boundary.answer(call, answering(text_result(document)))
    assert "plover" not in everything(answer)
    assert "Credentials" not in everything(answer)  # not even the outline's titles
    assert memory.load(stored_namespace(answer)).to_text() == document
    # The same result under `auto`, above the threshold, shows its preview, outline and the intent's passages.
    shown = site("auto", arguments={"k": 1, INTENT: "the password"}, intent=True)
    assert boundary.intent_of(shown) == "the password"
    answer = await boundary.answer(shown, answering(text_result(document + BIG)))
    assert "Credentials" in model_text(answer)
    assert "Preview of item 0" in model_text(answer)


async def test_intent_is_offered_only_when_the_settings_allow_it_and_the_model_said_something(
    memory: TaskMemory,
) -> None:
    on, off = ResultBoundary(memory), ResultBoundary(memory, ResultSettings(intent=False))
    assert on.intent_of(site(arguments={INTENT: "x"}, intent=True)) == "x"
    assert off.intent_of(site(arguments={INTENT: "x"}, intent=True)) is None
    assert on.intent_of(site(arguments={INTENT: "x"}, intent=False)) is None
    assert on.intent_of(site(arguments={INTENT: "  "}, intent=True)) is None
    assert on.intent_of(site(arguments={INTENT: 3}, intent=True)) is None
    assert on.intent_of(site(arguments=None, intent=True)) is None


def test_the_settings_reach_the_boundary() -> None:
    config = parse_config(
        {
            "mcpServers": {},
            "offprompt": {
                "threshold_tokens": 123,
                "blob_threshold_bytes": 4567,
                "preview_tokens": 89,
                "outline_tokens": 10,
                "intent": False,
            },
        }
    )
    assert ResultSettings.of(config.settings) == ResultSettings(
        thresholds=Thresholds(tokens=123, blob_bytes=4567), preview_tokens=89, outline_tokens=10, intent=False
    )


async def test_failures_become_error_results_that_say_what_went_wrong(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="offprompt.results")
    boundary = ResultBoundary(memory)
    own = await boundary.answer(site(), answering(InvalidArgumentError("no such path: use memory_list")))
    assert own.is_error
    assert model_text(own) == "no such path: use memory_list"
    crash = await boundary.answer(site(), answering(RuntimeError("disk on fire")))
    assert crash.is_error
    assert model_text(crash) == "files.read failed in offprompt (RuntimeError: disk on fire); see offprompt's log."
    assert caplog.messages[-1] == "files.read failed in offprompt"  # with the traceback
    hidden = await boundary.answer(site("always"), answering(RuntimeError("token=abc123")))
    assert hidden.is_error
    assert model_text(hidden) == (
        "files.read failed in offprompt (RuntimeError); its tool is marked sensitive, so the error's text is not "
        "shown. See offprompt's log."
    )
    assert caplog.messages[-1] == "files.read failed in offprompt (RuntimeError)"
    malformed = {"content": [{"type": "text", "text": 5}]}
    bad = await boundary.answer(site(), answering(malformed))
    assert bad.is_error
    assert model_text(bad).startswith("files.read answered with a malformed tool result (content.0")
    assert re.fullmatch(r"files\.read answered with a malformed tool result \(\d+ problems\)", caplog.messages[-1])
    not_object = await boundary.answer(site(), answering(["a list"]))
    assert model_text(not_object).startswith("files.read answered with a malformed tool result (result: ")
    bad = await boundary.answer(site("always"), answering({"content": [{"type": "text", "text": 5, "x": "s3cr3t"}]}))
    assert bad.is_error
    assert "s3cr3t" not in everything(bad)
    assert model_text(bad) == (
        'files.read answered with a malformed tool result. Its tool is marked sensitive ("off_prompt": "always"), '
        "so nothing of it is shown; the server's own log may say more."
    )
    assert "s3cr3t" not in caplog.text
    with pytest.raises(MCPError):  # a downstream's protocol error goes back as the JSON-RPC error it was
        await boundary.answer(site(), answering(MCPError(code=-32602, message="unknown tool")))
    with pytest.raises(MCPError):
        await boundary.relay(site(), answering(MCPError(code=-32602, message="unknown tool")))
    relayed = await boundary.relay(site(), answering(RuntimeError("disk on fire")))
    assert isinstance(relayed, dict)
    assert relayed["isError"] is True
    assert "disk on fire" in str(relayed)


async def test_a_sensitive_tools_own_error_is_stored_and_answered_as_an_error_with_its_reference(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    denied = {"content": [{"type": "text", "text": f"access denied for {SECRET}"}], "isError": True}
    answered = await boundary.answer(site("always"), answering(denied))
    relayed = await boundary.relay(site("always"), answering(denied))
    assert isinstance(relayed, dict)
    for answer in (answered, mt.CallToolResult.model_validate(relayed)):
        assert answer.is_error
        assert SECRET not in everything(answer)
        assert model_text(answer).startswith("files.read reported an error. Its tool is marked sensitive")
        assert memory.load(stored_namespace(answer), 0).to_text() == f"access denied for {SECRET}"
    # Other modes pass a downstream's error through as it came.
    assert model_text(await boundary.answer(site("auto"), answering(denied))) == f"access denied for {SECRET}"
    assert await boundary.relay(site("never"), answering(denied)) == dumps(denied)
    # The SDK path and `offprompt.wrap`, end to end.
    config = parse_config(CONFIG)
    proxy = Proxy(config.servers)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        proxied = await client.call_tool("vault__fail", {})
    wrapped_server = MCPServer("vault")

    @wrapped_server.tool()
    def unlock() -> str:
        """Opens the vault."""
        raise ToolError(f"access denied for {SECRET}")  # the SDK answers its text as an error result

    offprompt.wrap(wrapped_server, memory=memory, tools={"unlock": "always"})
    async with Client(wrapped_server) as client:
        wrapped = await client.call_tool("unlock", {})
    for answer in (proxied, wrapped):
        assert answer.is_error
        assert SECRET not in everything(answer)
        assert "reported an error" in model_text(answer)
        assert memory.load(stored_namespace(answer), 0).to_text().endswith(f"access denied for {SECRET}")
    # offprompt's own log names no content (the wrapped server's SDK logs its tool's error itself).
    assert not [r for r in caplog.records if r.name.startswith("offprompt") and SECRET in r.getMessage()]


async def test_the_fast_lane_relays_the_downstreams_own_bytes_or_the_reference_as_2025_json(
    memory: TaskMemory,
) -> None:
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    raw = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    seen: list[object] = []
    call = site(arguments={"path": "a", INTENT: "why"}, intent=True)
    assert await boundary.relay(call, answering(raw, seen)) == dumps(raw)
    assert seen == [{"path": "a"}]  # the fast lane forwards the tool's arguments, not offprompt's intent
    not_object = await boundary.relay(site(), answering(["a"]))
    assert not_object == {
        "content": [{"type": "text", "text": "files.read answered with a result that is not an object."}],
        "isError": True,
    }
    stored = await boundary.relay(site(), answering({"content": [{"type": "text", "text": BIG}]}))
    assert isinstance(stored, dict)
    assert "resultType" not in stored
    assert "artifact_namespace" in stored["content"][0]["text"]
    assert BIG not in json.dumps(stored)
    model = await boundary.relay(site(), answering(text_result("hi")))
    assert model == {"content": [{"type": "text", "text": "hi"}], "isError": False}
    # Over the byte pre-check but under the token threshold: parsed, counted, and still its own bytes.
    medium = {"content": [{"type": "text", "text": "word " * 300}]}
    boundary = ResultBoundary(memory, ResultSettings(thresholds=Thresholds(tokens=1000, blob_bytes=1000)))
    assert await boundary.relay(site(), answering(medium)) == dumps(medium)


async def test_secrets_in_a_result_become_handles_unless_the_tool_passes_them(memory: TaskMemory) -> None:
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    raw = {"content": [{"type": "text", "text": f"token: {GHP}"}]}
    answer = await boundary.answer(site(), answering(raw))
    assert GHP not in everything(answer)
    assert HANDLE_MARK in model_text(answer)
    relayed = await boundary.relay(site(), answering(raw))
    assert isinstance(relayed, dict)
    assert GHP not in json.dumps(relayed)
    assert not relayed.get("isError")
    assert relayed["content"][0]["text"].startswith(f"token: {HANDLE_MARK}")
    assert await boundary.relay(site(secrets="pass"), answering(raw)) == dumps(raw)
    passed = await boundary.answer(site(secrets="pass"), answering(raw))
    assert GHP in model_text(passed)
    # The handle goes back out as the secret, for this caller only; the stored arguments keep the handle.
    handle = model_text(answer).removeprefix("token: ")
    seen: list[object] = []
    call = site(arguments={"auth": handle, "q": GHP}, owner="")
    stored = await boundary.answer(call, answering(text_result(BIG), seen))
    assert seen == [{"auth": GHP, "q": GHP}]
    record = memory.get(stored_namespace(stored))
    assert GHP not in json.dumps(dict(record.arguments))
    assert record.arguments["auth"] == handle  # what the model sent, as it sent it
    assert str(record.arguments["q"]).startswith(HANDLE_MARK)  # a secret typed into the arguments: its handle
    seen.clear()
    listed = site(arguments={"headers": [f"Authorization: Bearer {handle}"]}, owner="")
    await boundary.answer(listed, answering(text_result("ok"), seen))
    assert seen == [{"headers": [f"Authorization: Bearer {GHP}"]}]  # a handle inside a list goes out as its value


async def test_a_downstreams_protocol_error_resource_and_prompt_get_handles_for_their_caller(
    memory: TaskMemory,
) -> None:
    """What a downstream says besides a tool result reaches the model too: its protocol errors (the SDK path and
    the fast lane), a resource it serves and a prompt it gives."""
    boundary = ResultBoundary(memory, SMALL_SETTINGS)
    refused = MCPError(mt.INVALID_PARAMS, f"bad credential {GHP}", data={"given": GHP})
    for call in (boundary.answer, boundary.relay):
        with pytest.raises(MCPError) as raised:
            await call(site(owner="alice"), answering(refused))
        assert GHP not in f"{raised.value.error.message} {raised.value.error.data}"
        assert raised.value.error.code == mt.INVALID_PARAMS
        handle = raised.value.error.message.removeprefix("bad credential ")
        assert substitute(boundary.redactor, {"k": handle}, "alice", "files") == {"k": GHP}  # the caller's own handle
        with pytest.raises(MCPError) as passed:
            await call(site(owner="alice", secrets="pass"), answering(refused))
        assert passed.value.error.message == f"bad credential {GHP}"  # a tool whose secrets pass shows them
    contents = mt.TextResourceContents(uri="file:///app/.env", text=f"GITHUB_TOKEN={GHP}")
    resource = await boundary.resource(mt.ReadResourceResult(contents=[contents]), "alice", "redact", "server")
    assert isinstance(resource.contents[0], mt.TextResourceContents)
    assert resource.contents[0].text.startswith(f"GITHUB_TOKEN={HANDLE_MARK}")
    message = mt.PromptMessage(role="user", content=mt.TextContent(text=f"use {GHP}"))
    prompt = await boundary.prompt(mt.GetPromptResult(messages=[message]), "alice", "redact", "server")
    assert isinstance(prompt.messages[0].content, mt.TextContent)
    assert prompt.messages[0].content.text.startswith(f"use {HANDLE_MARK}")
    assert GHP not in prompt.model_dump_json() + resource.model_dump_json()


async def test_a_downstreams_error_that_cannot_be_checked_keeps_its_code_and_shows_no_text(
    memory: TaskMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    boundary = ResultBoundary(memory, SMALL_SETTINGS)

    def unavailable(error: object, owner: str, server: str, allow: object = ()) -> object:
        raise OSError("secrets table unavailable")

    monkeypatch.setattr(boundary.redactor, "redact_error", unavailable)
    with pytest.raises(MCPError) as raised:
        await boundary.answer(site(), answering(MCPError(mt.INVALID_PARAMS, f"bad credential {GHP}")))
    assert raised.value.error.code == mt.INVALID_PARAMS
    assert "could not be checked for secrets" in raised.value.error.message
    assert GHP not in str(raised.value.error) + caplog.text
    assert "secrets table unavailable" in caplog.text  # the log says why, without the downstream's text


def substitute(redactor: Redactor, arguments: dict[str, Any], owner: str, server: str) -> dict[str, Any] | None:
    """The arguments as a call to `server` by `owner` sends them: handles filled in (`offprompt.arguments`)."""
    return fill(arguments, Receiver(server, "t", owner, None, None, {}, {}), redactor, None).arguments
