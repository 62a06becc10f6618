"""Tasks (2025-11-25), relayed: a task-augmented call to a proxied tool creates the task at its server; `tasks/*`
go back there; a task's final result passes the result boundary like any call's (stored when large)."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, TypeVar

import mcp_types as mt
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from offprompt.errors import OffpromptError
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.tasks import MAX_TASKS, RELATED_TASK
from offprompt.results import CallSite, ResultBoundary
from offprompt.serve.caller import Caller, Ctx
from offprompt.serve.notices import Notices
from offprompt.tools import TOOLS

T = TypeVar("T")


class TaskHandlers:
    """The middleware that starts a task, and one method per `tasks/*` request."""

    def __init__(self, proxy: Proxy, results: ResultBoundary, notices: Notices) -> None:
        self.proxy = proxy
        self.results = results
        self.notices = notices  # learns which client connection created each task
        self.sites: dict[str, CallSite] = {}  # task id → the call that created it, to settle its result

    def install(self, server: Server[Any]) -> None:
        server.middleware.append(self.start_task)
        server.add_request_handler("tasks/get", mt.GetTaskRequestParams, self.get_task)
        server.add_request_handler("tasks/cancel", mt.CancelTaskRequestParams, self.cancel_task)
        server.add_request_handler("tasks/result", mt.GetTaskPayloadRequestParams, self.task_result)
        server.add_request_handler("tasks/list", mt.PaginatedRequestParams, self.list_tasks)

    async def start_task(self, ctx: Ctx, call_next: CallNext) -> HandlerResult:
        """A task-augmented `tools/call` of a proxied tool: the task, created at its server."""
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, dict) or params.get("task") is None:
            return await call_next(ctx)
        call = mt.CallToolRequestParams.model_validate(params, by_name=False)
        route = await self.proxy.route(call.name) if call.name not in TOOLS else None
        if route is None or call.task is None:
            return await call_next(ctx)  # a memory tool runs at once; an unknown one gets its error there
        caller = Caller(ctx)
        site = caller.call_site(route, call.arguments)
        try:
            arguments = (await self.results.forward(site)).arguments
        except OffpromptError as exc:  # a handle or reference refused: the task is not created, nothing is sent
            raise MCPError(mt.INVALID_PARAMS, str(exc)) from None
        session = caller.client_session(self.proxy, route)
        task = call.task.model_dump(by_alias=True, exclude_none=True, mode="json")
        created = await _relayed(self.proxy.start_task(route, arguments, task, caller.channel(), session))
        task_id = created["task"]["taskId"]
        self.sites[task_id] = site
        self.notices.own_task(task_id, caller.connection, caller.owner or "")
        while len(self.sites) > MAX_TASKS:
            del self.sites[next(iter(self.sites))]
        return created

    async def get_task(self, ctx: Ctx, params: mt.GetTaskRequestParams) -> dict[str, Any]:
        return (await _relayed(self.proxy.task_request("tasks/get", _wire(params), Caller(ctx).channel())))[1]

    async def cancel_task(self, ctx: Ctx, params: mt.CancelTaskRequestParams) -> dict[str, Any]:
        return (await _relayed(self.proxy.task_request("tasks/cancel", _wire(params), Caller(ctx).channel())))[1]

    async def task_result(self, ctx: Ctx, params: mt.GetTaskPayloadRequestParams) -> dict[str, Any]:
        channel = Caller(ctx).channel()
        record, raw = await _relayed(self.proxy.task_request("tasks/result", _wire(params), channel))
        route = record.route
        site = self.sites.get(params.task_id) or CallSite(route.server, route.tool, route.mode)

        async def fetch(arguments: dict[str, Any] | None) -> dict[str, Any]:
            return raw  # the task ran with the arguments of its call; this is its outcome

        answer = await self.results.relay(site, fetch)
        settled: dict[str, Any] = json.loads(answer) if isinstance(answer, bytes) else answer
        meta = dict(settled.get("_meta") or {})
        meta.setdefault(RELATED_TASK, {"taskId": params.task_id})  # a reference must still name its task
        return {**settled, "_meta": meta}

    async def list_tasks(self, ctx: Ctx, params: mt.PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": await self.proxy.list_tasks(Caller(ctx).channel())}


def _wire(params: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = params.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def _relayed(pending: Awaitable[T]) -> T:
    """A tasks request's outcome; offprompt's own failure (a server that is down) as the client's error."""
    try:
        return await pending
    except OffpromptError as exc:
        raise MCPError(mt.INTERNAL_ERROR, str(exc)) from None
