"""A downstream MCP server with the names the MCP conformance suite calls.

`npx conformance server --url ...` (tests/peers/package.json) calls fixed tool,
resource and prompt names that only the conformance repo's own fixture
serves; server-everything fails most scenarios. This is a small Python
version of that fixture, built on the `mcp` SDK, so the suite has a passing
baseline: run it directly, then behind offprompt, and compare.

    python tests/peers/conformance_fixture.py                       # stdio
    python tests/peers/conformance_fixture.py --http --port 3950    # http://127.0.0.1:3950/mcp

Over HTTP it binds 127.0.0.1 only, with the SDK's DNS-rebinding protection.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

# 1x1 red PNG.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def _wav_base64() -> str:
    """A 10 ms silent 8 kHz mono 16-bit WAV."""
    frames = b"\x00\x00" * 80
    header = (
        b"RIFF"
        + (36 + len(frames)).to_bytes(4, "little")
        + b"WAVE"
        + b"fmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (1).to_bytes(2, "little")
        + (8000).to_bytes(4, "little")
        + (16000).to_bytes(4, "little")
        + (2).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + b"data"
        + len(frames).to_bytes(4, "little")
    )
    return base64.b64encode(header + frames).decode()


WAV_BASE64 = _wav_base64()

mcp: MCPServer[Any] = MCPServer(name="offprompt-conformance-fixture", version="1.0.0")


# -- tools ------------------------------------------------------------------


@mcp.tool(description="Returns simple text content")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@mcp.tool(description="Returns image content")
def test_image_content() -> list[types.ContentBlock]:
    return [types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")]


@mcp.tool(description="Returns audio content")
def test_audio_content() -> list[types.ContentBlock]:
    return [types.AudioContent(type="audio", data=WAV_BASE64, mime_type="audio/wav")]


@mcp.tool(description="Returns an embedded resource")
def test_embedded_resource() -> list[types.ContentBlock]:
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
            ),
        )
    ]


@mcp.tool(description="Returns text, image and resource content")
def test_multiple_content_types() -> list[types.ContentBlock]:
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@mcp.tool(description="Sends three info log notifications while running")
async def test_tool_with_logging(ctx: Context) -> str:
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@mcp.tool(description="Reports progress 0, 50, 100 of 100")
async def test_tool_with_progress(ctx: Context) -> str:
    await ctx.report_progress(0, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@mcp.tool(description="Always fails")
def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


@mcp.tool(description="Asks the client's LLM through sampling")
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return f"LLM response: {text}"


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    result: types.ElicitResult = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return result


@mcp.tool(description="Asks the user through elicitation")
async def test_elicitation(message: str, ctx: Context) -> str:
    result = await _elicit(
        ctx,
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool(description="Elicitation with defaults for every primitive type (SEP-1034)")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    result = await _elicit(
        ctx,
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool(description="Elicitation with the five enum schema variants (SEP-1330)")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    result = await _elicit(
        ctx,
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool(description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
    return f"name={name!r}, address={address!r}"


# The suite checks that $schema, $defs and additionalProperties reach tools/list
# unchanged, so the listed schema is written by hand rather than derived.
_schema_tool = mcp._tool_manager.get_tool("json_schema_2020_12_tool")
assert _schema_tool is not None
_schema_tool.parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@mcp.tool(description="Closes its SSE stream mid-call; the client must reconnect to get the result (SEP-1699)")
async def test_reconnection(ctx: Context) -> str:
    await asyncio.sleep(0.1)
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    return "Reconnection test completed successfully"


class MemoryEventStore(EventStore):
    """Keeps every event so a client that reconnects with Last-Event-ID gets the rest."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []
        self._counter = 0

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        self._counter += 1
        event_id = str(self._counter)
        self._events.append((event_id, stream_id, message))
        del self._events[:-10_000]  # a fixture: keep memory bounded
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for event_id, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# -- resources --------------------------------------------------------------


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG_BASE64)


@mcp.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    return "Watched resource content"


# -- prompts ----------------------------------------------------------------


@mcp.prompt(description="A simple prompt without arguments")
def test_simple_prompt() -> list[UserMessage]:
    return [UserMessage("This is a simple prompt for testing.")]


@mcp.prompt(description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@mcp.prompt(description="A prompt embedding a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    return [
        UserMessage(
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                ),
            )
        ),
        UserMessage("Please process the embedded resource above."),
    ]


@mcp.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[UserMessage]:
    return [
        UserMessage(types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")),
        UserMessage("Please analyze the image above."),
    ]


@mcp.completion()  # type: ignore[untyped-decorator, no-untyped-call]
async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
    values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


# -- requests MCPServer does not serve by itself ------------------------------

_low = mcp._lowlevel_server


async def _set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def _subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def _unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


_low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)
_low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
_low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=3950)
    args = parser.parse_args()
    if args.http:
        mcp.run(
            "streamable-http",
            host="127.0.0.1",
            port=args.port,
            event_store=MemoryEventStore(),
            retry_interval=500,
        )
    else:
        mcp.run("stdio")


if __name__ == "__main__":
    main()
