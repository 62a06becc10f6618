"""Tasks (2025-11-25) through offprompt: a task-augmented call creates the task at server-everything, `tasks/*`
reach it by task id, and the task's final result passes the result boundary like any call's.

The SDK's client refuses a CreateTaskResult to `tools/call` (it validates the result as a CallToolResult), so
the client here writes raw JSON-RPC lines to `offprompt serve` over stdio.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ..serving import needs_peers
from ..support import node_peer, offprompt_command, subprocess_env

pytestmark = needs_peers

RESEARCH = "everything__simulate-research-query"
RELATED_TASK = "io.modelcontextprotocol/related-task"


class RawClient:
    """A 2025-11-25 client on offprompt's stdin/stdout, one request at a time."""

    def __init__(self, tmp_path: Path, servers: dict[str, Any], capabilities: dict[str, Any] | None = None) -> None:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": servers}))
        command = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=subprocess_env()
        )
        self._ids = 0
        self.asked: list[dict[str, Any]] = []  # the requests offprompt relayed to this client
        self.reply: dict[str, Any] = {}  # what this client answers them
        self.notified: list[dict[str, Any]] = []  # the notifications it got
        client = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities or {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        self.initialized = self.request("initialize", client)
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response (result or error) to a request."""
        self._ids += 1
        self._write({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params or {}})
        assert self.process.stdout is not None
        while True:
            message = json.loads(self.process.stdout.readline())
            if "method" in message and "id" in message:  # a server's request, relayed: answer it
                self.asked.append(message)
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": self.reply})
            elif message.get("id") == self._ids:
                return dict(message)
            elif "method" in message:
                self.notified.append(message)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.answer(method, params)
        assert "result" in response, response
        return dict(response["result"])

    def create_task(self, tool: str, arguments: dict[str, Any]) -> str:
        """A task-augmented call; the id of the task it created."""
        created = self.request("tools/call", {"name": tool, "arguments": arguments, "task": {"ttl": 60000}})
        assert "task" in created, created
        assert created["task"]["status"] == "working"
        return str(created["task"]["taskId"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def everything(**options: Any) -> dict[str, Any]:
    return {"everything": {**node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio"), **options}}


def test_a_task_runs_at_its_server_and_its_final_result_is_stored_like_any_result(tmp_path: Path) -> None:
    client = RawClient(tmp_path, everything(tools={"simulate-research-query": {"off_prompt": "always"}}))
    try:
        assert client.initialized["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        tools = {t["name"]: t for t in client.request("tools/list")["tools"]}
        assert tools[RESEARCH]["execution"]["taskSupport"] in ("optional", "required")

        task_id = client.create_task(RESEARCH, {"topic": "tide pools"})
        assert client.request("tasks/get", {"taskId": task_id})["taskId"] == task_id
        assert task_id in [t["taskId"] for t in client.request("tasks/list")["tasks"]]

        final = client.request("tasks/result", {"taskId": task_id})  # waits for the task's end (~4 s)
        assert final["_meta"][RELATED_TASK] == {"taskId": task_id}
        stored = final["_meta"]["offprompt"]
        assert stored["tool"] == "everything.simulate-research-query"
        assert "tide pools" not in json.dumps(final["content"])  # off the prompt: only the reference
        loaded = client.request(
            "tools/call", {"name": "memory_load", "arguments": {"artifact_namespace": stored["artifact_namespace"]}}
        )
        assert "tide pools" in loaded["content"][0]["text"]
        assert client.request("tasks/get", {"taskId": task_id})["status"] == "completed"
        statuses = [m["params"] for m in client.notified if m["method"] == "notifications/tasks/status"]
        assert {s["taskId"] for s in statuses} == {task_id}
        assert statuses[-1]["status"] == "completed"
    finally:
        client.close()


def test_a_small_task_result_passes_through_and_cancel_and_unknown_tasks_reach_the_client(tmp_path: Path) -> None:
    client = RawClient(tmp_path, everything())
    try:
        task_id = client.create_task(RESEARCH, {"topic": "kelp"})
        final = client.request("tasks/result", {"taskId": task_id})
        assert "kelp" in json.dumps(final["content"])  # small: as the server wrote it
        assert final["_meta"][RELATED_TASK] == {"taskId": task_id}

        cancelled = client.request("tasks/cancel", {"taskId": client.create_task(RESEARCH, {"topic": "x"})})
        assert cancelled["status"] == "cancelled"

        unknown = client.answer("tasks/get", {"taskId": "no-such-task"})
        assert "Unknown task" in unknown["error"]["message"]
    finally:
        client.close()


def test_a_task_that_needs_input_asks_the_client_that_waits_for_its_result(tmp_path: Path) -> None:
    client = RawClient(tmp_path, everything(), capabilities={"elicitation": {}})
    client.reply = {"action": "accept", "content": {"interpretation": "rock pools of the Atlantic"}}
    try:
        task_id = client.create_task(RESEARCH, {"topic": "pools", "ambiguous": True})
        final = client.request("tasks/result", {"taskId": task_id})
        assert [m["method"] for m in client.asked] == ["elicitation/create"]
        assert "rock pools of the Atlantic" in json.dumps(final["content"])
    finally:
        client.close()


def test_a_task_augmented_call_gets_a_stored_output_passed_by_reference(tmp_path: Path) -> None:
    client = RawClient(tmp_path, everything())
    try:
        echoed = client.request("tools/call", {"name": "everything__echo", "arguments": {"message": LONG_MESSAGE}})
        token = echoed["_meta"]["offprompt"]["pass_as"]  # stored: the echo is over the threshold
        task_id = client.create_task(RESEARCH, {"topic": token.replace("⟧", " lines=1-1⟧")})
        final = client.request("tasks/result", {"taskId": task_id})
        shown = json.dumps(final["content"])
        assert "kelp forest" in shown  # the first line of the stored echo reached the server as the topic
        assert "memory:" not in shown

        refused = client.answer(
            "tools/call", {"name": RESEARCH, "arguments": {"topic": "⟦memory:zzzzzzzzzzzzz/0⟧"}, "task": {"ttl": 60000}}
        )
        assert "memory_list" in refused["error"]["message"]  # no task was created at the server
    finally:
        client.close()


#: An echo that offprompt stores (over 4,000 tokens), whose first line is short.
LONG_MESSAGE = "kelp forest\n" + "filler words for the threshold\n" * 1200
