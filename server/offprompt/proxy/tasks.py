"""Tasks (the 2025-11-25 tasks utility): which downstream runs each task, and which client may see it.

A task-augmented `tools/call` goes to the server of the tool and creates a task there; `tasks/get`,
`tasks/result`, `tasks/cancel` and `tasks/list` go back to that server by task id. A task belongs to the client
connection that created it: another client gets "unknown task", as it would from the server itself.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from offprompt.proxy.downstreams import Downstream, Route

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
