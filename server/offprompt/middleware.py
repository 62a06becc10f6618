"""Off-prompt results for an MCP server written in Python, without a proxy hop.

    server = MCPServer("logs")
    ...
    offprompt.wrap(server, tools={"read_secrets": "always"})

`wrap` adds one middleware to the server (an `MCPServer` or a low-level
`Server`): `tools/list` gains the memory tools (and loses the `outputSchema`
of tools whose results may become references), and every `tools/call` result
goes through the same policy as the proxy's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any, Protocol

import anyio.to_thread
import mcp_types as mt
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from pydantic import BaseModel
from starlette.requests import Request

from offprompt import tokens, tools
from offprompt.config import OffPrompt, SecretsMode
from offprompt.errors import OffpromptError
from offprompt.memory.settings import MemorySettings
from offprompt.memory.siblings import open_free
from offprompt.memory.task_memory import TaskMemory
from offprompt.policy import Thresholds
from offprompt.results import CallSite, ResultBoundary, ResultSettings, error_result
from offprompt.tools import TOOLS

logger = logging.getLogger(__name__)


class _HasMiddleware(Protocol):
    @property
    def middleware(self) -> list[ServerMiddleware[Any]]: ...


def _as_dict(result: HandlerResult) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(result or {})


class OffPromptMiddleware:
    """Stores large or sensitive tool results of the server it wraps, and serves the memory tools."""

    def __init__(
        self,
        memory: TaskMemory | MemorySettings,
        *,
        off_prompt: OffPrompt = "auto",
        tools: Mapping[str, OffPrompt] | None = None,
        thresholds: Thresholds | None = None,
        preview_tokens: int = 0,
        outline_tokens: int = 400,
        source: str = "server",
        secrets: SecretsMode = "redact",
        pass_secrets: Collection[str] = (),
    ) -> None:
        self._memory = memory if isinstance(memory, TaskMemory) else None
        self._settings = memory if isinstance(memory, MemorySettings) else None
        self._open_lock = threading.Lock()
        self.off_prompt = off_prompt
        self.tools = dict(tools or {})
        self.source = source
        self.secrets = secrets
        self.pass_secrets = frozenset(pass_secrets)
        self.schemas: dict[str, Any] = {}  # each tool's input schema, as its tools/list gave it
        self.results = ResultBoundary(
            self.memory, ResultSettings(thresholds or Thresholds(), preview_tokens, outline_tokens)
        )

    def memory(self) -> TaskMemory:
        """The memory, opened on first use (it takes the directory lock then, not at import)."""
        with self._open_lock:
            if self._memory is None:
                assert self._settings is not None
                self._memory = open_free(self._settings)
            return self._memory

    def policy_for(self, tool: str) -> OffPrompt:
        return self.tools.get(tool, self.off_prompt)

    def secrets_for(self, tool: str) -> SecretsMode:
        return "pass" if tool in self.pass_secrets else self.secrets

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            return await self._list(ctx, call_next)
        if ctx.method == "tools/call":
            return await self._call(ctx, call_next)
        return await call_next(ctx)

    async def _list(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = _as_dict(await call_next(ctx))
        for tool in result.get("tools", []):
            self.schemas[tool["name"]] = tool.get("inputSchema")  # what type a `⟦memory:…⟧` argument takes
            if self.policy_for(tool["name"]) != "never":
                tool.pop("outputSchema", None)  # a reference cannot match it
        if not (ctx.params or {}).get("cursor"):
            result["tools"] = [
                t.definition().model_dump(mode="json", by_alias=True, exclude_none=True) for t in TOOLS.values()
            ] + list(result.get("tools", []))
        return result

    async def _call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        name = str(params.get("name", ""))
        memory_tool = TOOLS.get(name)
        if memory_tool is not None:
            try:
                memory = await anyio.to_thread.run_sync(self.memory)
            except OffpromptError as exc:
                return error_result(str(exc))
            over_http = isinstance(getattr(ctx, "request", None), Request)
            return await tools.call(memory, memory_tool, params.get("arguments"), None, over_http=over_http)
        arguments = params.get("arguments")
        site = CallSite(
            self.source,
            name,
            self.policy_for(name),
            arguments if isinstance(arguments, dict) else None,
            secrets=self.secrets_for(name),
            schema=self.schemas.get(name),
        )
        made: list[tuple[HandlerResult, mt.CallToolResult]] = []

        async def fetch(forwarded: dict[str, Any] | None) -> mt.CallToolResult:
            call = ctx if forwarded is site.arguments else replace(ctx, params={**params, "arguments": forwarded})
            raw = await call_next(call)
            made.append((raw, mt.CallToolResult.model_validate(_as_dict(raw))))
            return made[0][1]

        answer = await self.results.answer(site, fetch)
        if made and answer is made[0][1]:
            return made[0][0]  # untouched, as the server made it
        return answer


def wrap(
    server: _HasMiddleware,
    *,
    memory: TaskMemory | MemorySettings | None = None,
    off_prompt: OffPrompt = "auto",
    tools: Mapping[str, OffPrompt] | None = None,
    threshold_tokens: int = 4000,
    blob_threshold_bytes: int = 256 * 1024,
    preview_tokens: int = 0,
    outline_tokens: int = 400,
    secrets: SecretsMode = "redact",
    pass_secrets: Collection[str] = (),
) -> OffPromptMiddleware:
    """Give `server` off-prompt results and the memory tools; returns the middleware it added.

    Known-format secrets in results become handles (`secrets="pass"` turns that off; `pass_secrets` names tools
    whose results keep theirs), and handles in a call's arguments become their values before the tool runs.
    """
    middleware = OffPromptMiddleware(
        memory if memory is not None else MemorySettings(),
        off_prompt=off_prompt,
        tools=tools,
        thresholds=Thresholds(tokens=threshold_tokens, blob_bytes=blob_threshold_bytes),
        preview_tokens=preview_tokens,
        outline_tokens=outline_tokens,
        source=getattr(server, "name", "server"),
        secrets=secrets,
        pass_secrets=pass_secrets,
    )
    server.middleware.append(middleware)
    # The tokenizer tables load in the background, so the first large result does not wait for them.
    threading.Thread(target=tokens.warm_up, name="offprompt-warm-up", daemon=True).start()
    return middleware
