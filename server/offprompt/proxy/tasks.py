"""Tasks (the 2025-11-25 tasks utility): which downstream runs each task, and which client may see it.

A task-augmented `tools/call` goes to the server of the tool and creates a task there; `tasks/get`,
`tasks/result`, `tasks/cancel` and `tasks/list` go back to that server by task id. A task belongs to the client
connection that created it: another client gets "unknown task", as it would from the server itself.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError

from offprompt.errors import DownstreamTimeoutError, DownstreamUnavailableError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from offprompt.proxy.client_features import ClientChannel
    from offprompt.proxy.downstream import Downstream
    from offprompt.proxy.routes import Route

logger = logging.getLogger(__name__)

#: The `_meta` key that ties a message to its task (a final result must carry it).
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Tasks remembered at most; the oldest are forgotten first (a server keeps a task only for its ttl anyway).
MAX_TASKS = 10_000


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """Where a task runs and whose it is."""

    route: Route
    downstream: Downstream  # the process that runs it (a `per_session` server's own one included)
    owner: int  # the id of the client connection that created it


class TaskBook:
    """The tasks created through offprompt, by task id."""

    def __init__(self, limit: int = MAX_TASKS) -> None:
        self._tasks: OrderedDict[str, TaskRecord] = OrderedDict()
        self._limit = limit

    def add(self, task_id: str, record: TaskRecord) -> None:
        self._tasks[task_id] = record
        while len(self._tasks) > self._limit:
            self._tasks.popitem(last=False)

    def find(self, params: dict[str, Any] | None, owner: int) -> tuple[str, TaskRecord]:
        """The task a `tasks/*` request names, if the caller created it; else the error a server would give."""
        task_id = (params or {}).get("taskId")
        record = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if record is None or record.owner != owner:
            raise MCPError(
                mt.INVALID_PARAMS,
                f"Unknown task: {task_id!r}. Call tasks/list to see your tasks (a task expires after its ttl).",
            )
        assert isinstance(task_id, str)
        return task_id, record

    def owned(self, owner: int) -> dict[str, TaskRecord]:
        return {task_id: r for task_id, r in self._tasks.items() if r.owner == owner}


async def create_task(
    tg: TaskGroup,
    book: TaskBook,
    downstream: Downstream,
    route: Route,
    arguments: dict[str, Any] | None,
    task: dict[str, Any],
    caller: ClientChannel,
    limit: float | None,
) -> dict[str, Any]:
    """A task-augmented call to `downstream`: the server's CreateTaskResult as it wrote it; the task is the
    caller's, kept in `book`."""
    params = {"name": route.tool, "arguments": arguments or {}, "task": task}
    created = await downstream.request_raw(tg, "tools/call", params, limit, caller)
    found = created.get("task")
    task_id = found.get("taskId") if isinstance(found, dict) else None
    if not isinstance(task_id, str):
        raise MCPError(mt.INTERNAL_ERROR, f'"{route.server}.{route.tool}" created no task: it answered {created}')
    book.add(task_id, TaskRecord(route, downstream, id(caller.client)))
    return created


async def relay_task_request(
    tg: TaskGroup,
    book: TaskBook,
    method: str,
    params: dict[str, Any],
    caller: ClientChannel,
    limit_of: Callable[[Route], float | None],
) -> tuple[TaskRecord, dict[str, Any]]:
    """`tasks/get`, `tasks/result` or `tasks/cancel`, sent to the server that runs the task. `tasks/result`
    waits for the task's end; what the server asks the client meanwhile (input_required) goes to `caller`."""
    _, record = book.find(params, id(caller.client))
    limit = None if method == "tasks/result" else limit_of(record.route)  # a task runs as long as it runs
    return record, await record.downstream.request_raw(tg, method, params, limit, caller)


async def list_owned_tasks(
    tg: TaskGroup, book: TaskBook, caller: ClientChannel, limit: float | None
) -> list[dict[str, Any]]:
    """The caller's tasks, as the servers that run them list them now."""
    owned = book.owned(id(caller.client))
    listed: list[dict[str, Any]] = []
    for downstream in {id(r.downstream): r.downstream for r in owned.values()}.values():
        try:
            page = await downstream.request_raw(tg, "tasks/list", {}, limit, caller)
        except (MCPError, DownstreamUnavailableError, DownstreamTimeoutError) as exc:
            logger.warning('listing the tasks of "%s" failed: %s', downstream.name, exc)
            continue
        tasks = page.get("tasks")
        listed += (
            [t for t in tasks if isinstance(t, dict) and t.get("taskId") in owned] if isinstance(tasks, list) else []
        )
    return listed
