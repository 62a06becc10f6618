"""Builds the one low-level MCP `Server`: the memory tools, `memory://` resources, and (later) proxied tools."""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import urlparse

import anyio.to_thread
import mcp_types as mt
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from offprompt import __version__
from offprompt.artifacts import BlobArtifact
from offprompt.errors import NotFoundError, OffpromptError
from offprompt.memory import URI_SCHEME, TaskMemory
from offprompt.tools import TOOLS, parse_args

logger = logging.getLogger(__name__)

Ctx = ServerRequestContext[Any, Any]

INSTRUCTIONS = (
    "Large or sensitive tool outputs are stored in memory instead of being shown in full; you get a "
    "reference with a memory_name and an artifact_namespace. Use memory_query (by meaning) or memory_grep "
    "(by regex) to find what you need in it, and memory_load to read a token window or get an image back."
)


def error_result(message: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=message)], is_error=True)


def owner_of(ctx: Ctx) -> str | None:
    """Whose namespaces a request may see: None (all of them) until HTTP callers carry tokens."""
    return None


def build_server(memory: TaskMemory) -> Server[Any]:
    """The MCP server that serves `memory` through the memory tools and `memory://` resources."""

    async def list_tools(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[tool.definition() for tool in TOOLS.values()])

    async def call_tool(ctx: Ctx, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(mt.INVALID_PARAMS, f"Unknown tool: {params.name}. Call tools/list to see the tools.")
        try:
            args = parse_args(tool, params.arguments)
            return await tool.handler(memory, args, owner_of(ctx))
        except OffpromptError as exc:
            return error_result(str(exc))
        except Exception as exc:
            logger.exception("%s failed", params.name)
            return error_result(
                f"{params.name} failed unexpectedly ({type(exc).__name__}: {exc}); see offprompt's log."
            )

    async def list_resources(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        records = await anyio.to_thread.run_sync(memory.list, 50, owner_of(ctx))
        return mt.ListResourcesResult(
            resources=[
                mt.Resource(
                    uri=f"{URI_SCHEME}://{memory.name}/{r.namespace}",
                    name=r.namespace,
                    title=f"Output of {r.tool}",
                    description=f"{'+'.join(r.kinds)}, {r.tokens:,} tokens, {r.bytes:,} bytes",
                    size=r.bytes,
                )
                for r in records
            ]
        )

    async def list_templates(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListResourceTemplatesResult:
        return mt.ListResourceTemplatesResult(
            resource_templates=[
                mt.ResourceTemplate(
                    uri_template=f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}",
                    name="stored-output",
                    description="A tool output offprompt stored, every item of it.",
                )
            ]
        )

    async def read_resource(ctx: Ctx, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        try:
            return await anyio.to_thread.run_sync(_read_memory_uri, memory, str(params.uri), owner_of(ctx))
        except OffpromptError as exc:
            raise MCPError(mt.INVALID_PARAMS, str(exc)) from None

    return Server(
        "offprompt",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _read_memory_uri(memory: TaskMemory, uri: str, owner: str | None) -> mt.ReadResourceResult:
    """`memory://{memory_name}/{namespace}` (every item) or `.../{namespace}/{item}` (one)."""
    parsed = urlparse(uri)
    parts = [p for p in parsed.path.split("/") if p]
    if parsed.scheme != URI_SCHEME or parsed.netloc != memory.name or len(parts) not in (1, 2):
        raise NotFoundError(
            f"cannot read {uri}: this offprompt serves {URI_SCHEME}://{memory.name}/{{artifact_namespace}}"
        )
    record = memory.get(parts[0], owner)
    items = [int(parts[1])] if len(parts) == 2 and parts[1].isdigit() else [i.item for i in record.items]
    contents: list[mt.TextResourceContents | mt.BlobResourceContents] = []
    for item in items:
        artifact = memory.load(record.namespace, item, owner)
        item_uri = f"{URI_SCHEME}://{memory.name}/{record.namespace}/{item}"
        if isinstance(artifact, BlobArtifact):
            contents.append(
                mt.BlobResourceContents(
                    uri=item_uri, mime_type=artifact.mime_type, blob=base64.b64encode(artifact.value).decode()
                )
            )
        else:
            mime = "application/json" if artifact.kind == "json" else "text/plain"
            contents.append(mt.TextResourceContents(uri=item_uri, mime_type=mime, text=artifact.to_text()))
    return mt.ReadResourceResult(contents=contents)
