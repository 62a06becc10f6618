"""The command line beside a real `offprompt serve` subprocess, and the serve flags."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ..support import meta, offprompt_command, subprocess_env
from .fill import LINES, counter_config
from .run import spawn

pytestmark = pytest.mark.anyio


def _json(run: subprocess.CompletedProcess[str]) -> Any:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


async def test_reading_works_and_writing_waits_while_a_server_holds_the_memory(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(counter_config(tmp_path)))
    data = tmp_path / "data"
    where = ["--data-dir", str(data), "--memory-name", "held"]
    command, *args = offprompt_command("serve", "--config", str(config), *where)
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        params = StdioServerParameters(command=command, args=args, env=subprocess_env(HF_HUB_OFFLINE="1"))
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            stored = await client.call_tool("counter__lines", {"count": LINES})
            await client.call_tool("counter__echo", {"text": "small"})
            ns = meta(stored)["artifact_namespace"]
            listed_tools = len((await client.list_tools()).tools)

            memories = _json(await anyio.to_thread.run_sync(spawn, "memories", "--data-dir", str(data), "--json"))
            pid = memories["memories"][0]["holder_pid"]
            assert pid is not None
            assert pid.isdigit()
            listed = _json(await anyio.to_thread.run_sync(spawn, "memory", "ls", *where, "--json"))
            assert [r["artifact_namespace"] for r in listed["namespaces"]] == [ns]
            grep = _json(await anyio.to_thread.run_sync(spawn, "memory", "grep", "request 17$", *where, "--json"))
            assert [m["line"] for m in grep["matches"]] == [18]
            query = _json(await anyio.to_thread.run_sync(spawn, "memory", "query", "request 42", *where, "--json"))
            assert query["mode"] == "lexical"
            assert f"offprompt pid {pid} holds this memory's vectors" in query["note"]
            assert "handled request 42\n" in query["results"][0]["text"]
            cat = await anyio.to_thread.run_sync(spawn, "memory", "cat", ns, "--line", "3", *where)
            assert cat.stdout.startswith("2026-11-30T00:00:02 INFO worker-2 handled request 2\n")
            shown = _json(await anyio.to_thread.run_sync(spawn, "memory", "show", ns, *where, "--json"))
            assert (shown["tool"], shown["arguments"]) == ("counter.lines", {"count": LINES})
            assert [i["kind"] for i in shown["items"]] == ["text", "json"]
            assert f"{LINES}x INFO worker-<n> handled request <*>" in "\n".join(shown["outline"])

            refused = await anyio.to_thread.run_sync(spawn, "memory", "rm", ns, *where)
            assert refused.returncode == 2
            assert f"in use by another offprompt process (pid {pid})" in refused.stderr
            assert "--wait" in refused.stderr

            waiter = subprocess.Popen(  # noqa: ASYNC220 - started here, waited for in a thread
                offprompt_command("memory", "rm", ns, "--wait", *where),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=subprocess_env(),
            )
            assert waiter.stderr is not None
            first = await anyio.to_thread.run_sync(waiter.stderr.readline)
            assert first.startswith(f"waiting for offprompt pid {pid} to release memory 'held'")
        # The client went away: the server stops and the waiting rm goes ahead.
        out, _ = await anyio.to_thread.run_sync(waiter.communicate)
    assert waiter.returncode == 0
    assert out.startswith(f"deleted {ns}")
    assert _json(spawn("memory", "ls", *where, "--json"))["namespaces"] == []
    startup = [line for line in log.read_text().splitlines() if line.startswith("offprompt: memory ")]
    assert startup == [f"offprompt: memory {data / 'held'}; 1/1 servers (counter); {listed_tools} tools"]
    stats = _json(spawn("stats", *where, "--json"))["memories"][0]
    tools = {(t["server"], t["tool"]): t for t in stats["tools"]}
    assert tools[("counter", "echo")]["inline"] == 1  # relayed by the fast lane, counted by its bytes
    assert tools[("counter", "lines")]["stored"] == 1


async def test_serve_flags_ephemeral_threshold_preview_and_ttl(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(counter_config(tmp_path, threshold=4000)))
    command, *args = offprompt_command(
        "serve",
        "--config",
        str(config),
        "--ephemeral",
        "--threshold-tokens",
        "100",
        "--preview-tokens",
        "10",
        "--ttl-days",
        "2",
    )
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        params = StdioServerParameters(command=command, args=args, env=subprocess_env(HF_HUB_OFFLINE="1"))
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            result = await client.call_tool("counter__lines", {"count": 20})  # ~300 tokens: over 100
            listed = meta(await client.call_tool("memory_list", {}))["namespaces"][0]
    assert meta(result)["artifact_namespace"] == listed["artifact_namespace"]
    shown = "\n".join(b.text for b in result.content if hasattr(b, "text"))
    assert "Preview of item 0:\n2026-11-30T00:00" in shown  # 10 tokens of it
    assert "worker-0" not in shown
    life = dt.datetime.fromisoformat(listed["expires"]) - dt.datetime.fromisoformat(listed["created"])
    assert abs(life.total_seconds() - 2 * 86400) <= 1
    line = next(line for line in log.read_text().splitlines() if line.startswith("offprompt: memory "))
    memory_dir = Path(line.removeprefix("offprompt: memory ").split(";")[0])
    assert memory_dir.name == "default"
    assert not memory_dir.parent.exists()  # the temporary data directory went with the server


def test_serve_at_a_terminal_says_it_waits_for_a_client_and_from_a_pipe_does_not(tmp_path: Path) -> None:
    """Someone who types `offprompt serve` in a shell sees why nothing happens; a client's pipe gets no such line."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    command = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    said: dict[str, str] = {}
    for kind in ("terminal", "pipe"):
        leader, follower = pty.openpty() if kind == "terminal" else os.pipe()
        server = subprocess.Popen(command, stdin=follower, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        os.close(follower)
        assert server.stderr is not None
        lines: list[str] = []
        for line in server.stderr:  # the start-up line comes last, once the (no) servers are up
            lines.append(line)
            if line.startswith("offprompt: memory "):
                break
        server.terminate()
        server.wait(timeout=60)
        os.close(leader)
        said[kind] = "".join(lines)
    assert "offprompt: waiting for an MCP client on stdin" in said["terminal"]
    assert "Ctrl-C" in said["terminal"]
    assert "waiting for an MCP client" not in said["pipe"]
