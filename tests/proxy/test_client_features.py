"""Sampling, elicitation and roots pass through offprompt: a downstream asks, the client that called answers.

server-everything registers its trigger tools only for a client that declares these features, asks the
client for a completion or a form, and lists the roots it was given. Through offprompt each must work as
it does directly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client, ClientSession
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from ..support import node_peer, offprompt_command, subprocess_env, text_of
from .inprocess import in_process

# Sampling is deprecated at 2026-07-28 (SEP-2577), and still what 2025-era servers and clients use.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

ROOT = "file:///work/project-a"


async def sampling(context: ClientRequestContext, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
    asked = params.messages[0].content
    assert isinstance(asked, mt.TextContent)
    return mt.CreateMessageResult(
        role="assistant", content=mt.TextContent(text=f"sampled: {asked.text}"), model="test-model"
    )


async def elicitation(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"name": "Ada", "check": True, "email": "ada@example.com"})


async def roots(context: ClientRequestContext) -> mt.ListRootsResult:
    return mt.ListRootsResult(roots=[mt.Root(uri=ROOT, name="project-a")])


@asynccontextmanager
async def session(command: str, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=list(args), env=subprocess_env())
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        client = await stack.enter_async_context(
            ClientSession(
                read, write, sampling_callback=sampling, elicitation_callback=elicitation, list_roots_callback=roots
            )
        )
        await client.initialize()
        yield client


def texts(result: mt.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, mt.TextContent)]


CALLS = [("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 20}), ("get-roots-list", {})]


async def test_sampling_and_roots_work_through_offprompt_as_directly(tmp_path: Path) -> None:
    everything = node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")
    async with session(str(everything["command"]), *everything["args"]) as direct:  # type: ignore[misc]
        expected = [texts(await direct.call_tool(tool, args)) for tool, args in CALLS]
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    async with session(command, *args) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert {"everything__trigger-sampling-request", "everything__get-roots-list"} <= listed
        got = [texts(await client.call_tool(f"everything__{tool}", args)) for tool, args in CALLS]
    assert got == expected
    assert "sampled: " in got[0][0]
    assert ROOT in got[1][0]


async def test_an_elicitation_reaches_the_client_that_called(tmp_path: Path) -> None:
    everything = node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    async with session(command, *args) as client:
        result = await client.call_tool("everything__trigger-elicitation-request", {})
    assert not result.is_error
    assert "Ada" in "\n".join(texts(result))


# -- the SDK path, in one process: which client answers ----------------------------------------------------

demo = MCPServer("demo")
both_in_flight = anyio.Event()
arrived = 0


@demo.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model."""
    reply = await ctx.session.create_message(
        messages=[mt.SamplingMessage(role="user", content=mt.TextContent(text=question))], max_tokens=10
    )
    assert isinstance(reply.content, mt.TextContent)
    return f"the model said {reply.content.text}"


@demo.tool()
async def ask_together(question: str, ctx: Context) -> str:
    """Ask the client's model once another call is in flight too."""
    global arrived
    arrived += 1
    if arrived == 2:
        both_in_flight.set()
    await both_in_flight.wait()
    try:
        await ctx.session.create_message(
            messages=[mt.SamplingMessage(role="user", content=mt.TextContent(text=question))], max_tokens=10
        )
    except MCPError as exc:
        return f"refused: {exc.error.message}"
    return "answered"


def answering(name: str, asked: list[str]) -> Any:
    async def sample(context: ClientRequestContext, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        asked.append(name)
        return mt.CreateMessageResult(role="assistant", content=mt.TextContent(text=name), model="test-model")

    return sample


@asynccontextmanager
async def proxy_of_demo(memory: TaskMemory) -> AsyncIterator[Server[Any]]:
    config = parse_config({"mcpServers": {"demo": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"demo": demo}))
    async with proxy.running():
        yield build_server(memory, proxy, config.settings)


async def test_the_client_whose_call_it_is_answers_on_the_sdk_path(memory: TaskMemory) -> None:
    asked: list[str] = []
    async with (
        proxy_of_demo(memory) as server,
        Client(server, mode="legacy", sampling_callback=answering("alice", asked)) as alice,
        Client(server, mode="legacy", sampling_callback=answering("bob", asked)) as bob,
    ):
        assert text_of(await bob.call_tool("demo__ask", {"question": "q"})) == "the model said bob"
        assert text_of(await alice.call_tool("demo__ask", {"question": "q"})) == "the model said alice"
    assert asked == ["bob", "alice"]


async def test_overlapping_calls_of_two_clients_are_refused_never_guessed(memory: TaskMemory) -> None:
    asked: list[str] = []
    results: list[str] = []

    async def call(client: Client) -> None:
        results.append(text_of(await client.call_tool("demo__ask_together", {"question": "q"})))

    async with (
        proxy_of_demo(memory) as server,
        Client(server, mode="legacy", sampling_callback=answering("alice", asked)) as alice,
        Client(server, mode="legacy", sampling_callback=answering("bob", asked)) as bob,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(call, alice)
        tg.start_soon(call, bob)
    assert asked == []
    assert len(results) == 2
    assert all(r.startswith("refused:") and "cannot tell which of its clients" in r for r in results)
    assert all('"per_session": true in mcpServers.demo' in r for r in results)  # the way out


def pair_asker() -> MCPServer:
    """A server whose tool asks the client's model once two calls of it are in flight."""
    server = MCPServer("pair")
    both_in_flight = anyio.Event()
    arrived: list[str] = []

    @server.tool()
    async def ask_when_both(question: str, ctx: Context) -> str:
        """Ask once another call is in flight too."""
        arrived.append(question)
        if len(arrived) == 2:
            both_in_flight.set()
        await both_in_flight.wait()
        reply = await ctx.session.create_message(
            messages=[mt.SamplingMessage(role="user", content=mt.TextContent(text=question))], max_tokens=10
        )
        assert isinstance(reply.content, mt.TextContent)
        return f"the model said {reply.content.text}"

    return server


async def test_overlapping_calls_of_one_client_are_answered_by_it(memory: TaskMemory) -> None:
    asked: list[str] = []
    results: list[str] = []
    config = parse_config({"mcpServers": {"pair": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"pair": pair_asker()}))

    async def call(client: Client, question: str) -> None:
        results.append(text_of(await client.call_tool("pair__ask_when_both", {"question": question})))

    async with (
        proxy.running(),
        Client(
            build_server(memory, proxy, config.settings), mode="legacy", sampling_callback=answering("alice", asked)
        ) as alice,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(call, alice, "first")
        tg.start_soon(call, alice, "second")
    assert asked == ["alice", "alice"]
    assert results == ["the model said alice", "the model said alice"]


def interviewer() -> MCPServer:
    """A 2025-era server whose tool asks the client's model twice, then the user once."""
    server = MCPServer("interviewer")

    @server.tool()
    async def interview(topic: str, ctx: Context) -> str:
        """Ask the model twice and the user once."""
        said = []
        for question in (f"{topic}?", f"more on {topic}?"):
            reply = await ctx.session.create_message(
                messages=[mt.SamplingMessage(role="user", content=mt.TextContent(text=question))], max_tokens=10
            )
            assert isinstance(reply.content, mt.TextContent)
            said.append(reply.content.text)
        form = await ctx.session.elicit_form(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        )
        name = form.content["name"] if form.action == "accept" and form.content else "nobody"
        return f"{' / '.join(said)} — signed {name}"

    return server


async def test_a_2026_client_answers_a_downstream_s_requests_in_input_required_rounds(memory: TaskMemory) -> None:
    asked: list[str] = []

    async def sample(context: ClientRequestContext, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, mt.TextContent)
        asked.append(question.text)
        return mt.CreateMessageResult(role="assistant", content=mt.TextContent(text=f"re {question.text}"), model="m")

    async def form(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"name": "Ada"})

    config = parse_config({"mcpServers": {"iv": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"iv": interviewer()}))
    server = build_server(memory, proxy, config.settings)
    async with (
        proxy.running(),
        Client(server, sampling_callback=sample, elicitation_callback=form) as client,  # 2026-07-28
    ):
        result = await client.call_tool("iv__interview", {"topic": "tides"})
    assert text_of(result) == "re tides? / re more on tides? — signed Ada"
    assert asked == ["tides?", "more on tides?", "Your name?"]  # three rounds, in order


async def test_a_2026_retry_with_a_made_up_request_state_is_refused(memory: TaskMemory) -> None:
    config = parse_config({"mcpServers": {"iv": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"iv": interviewer()}))
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool("iv__interview", {"topic": "x"}, request_state="made-up")


# -- logging, completions, subscriptions (server-everything over stdio) ------------------------------------


async def test_logs_completions_and_resource_updates_pass_through(tmp_path: Path) -> None:
    everything = node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio")
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"everything": everything}}))
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    logged: list[mt.LoggingMessageNotificationParams] = []
    updated: list[str] = []
    got_log, got_update = anyio.Event(), anyio.Event()

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        logged.append(params)
        got_log.set()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            got_update.set()

    params = StdioServerParameters(command=command, args=args, env=subprocess_env())
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as client,
    ):
        await client.initialize()
        completion = await client.complete(
            mt.PromptReference(name="everything__completable-prompt"), {"name": "department", "value": "Eng"}
        )
        assert completion.completion.values == ["Engineering"]

        await client.set_logging_level("debug")
        await client.call_tool("everything__toggle-simulated-logging", {})
        with anyio.fail_after(30):  # a hang guard: it sends one every 5 s
            await got_log.wait()
        assert logged[0].logger is not None
        assert logged[0].logger.startswith("everything")

        resources = (await client.list_resources()).resources
        uri = str(resources[0].uri)
        await client.subscribe_resource(uri)
        await client.call_tool("everything__toggle-subscriber-updates", {})
        with anyio.fail_after(30):
            await got_update.wait()
        assert updated[0] == uri
