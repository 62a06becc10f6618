"""`offprompt serve` as a client starts it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .support import loaded_by, offprompt_command, subprocess_env

pytestmark = pytest.mark.anyio


async def test_serve_answers_over_stdio(tmp_path: Path) -> None:
    command, *args = offprompt_command("serve", "--data-dir", str(tmp_path), "--memory-name", "cli")
    params = StdioServerParameters(command=command, args=args, env=subprocess_env(HF_HUB_OFFLINE="1"))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "offprompt"
        tools = await session.list_tools()
        assert {t.name for t in tools.tools} == {
            "memory_load",
            "memory_query",
            "memory_grep",
            "memory_list",
            "memory_delete",
            "memory_outline",
            "memory_select",
        }
        assert all(t.output_schema is None for t in tools.tools)
        listed = await session.call_tool("memory_list", {})
        assert not listed.is_error


def test_starting_does_not_load_chroma_or_the_model() -> None:
    # Clients start their servers at launch; a quick `initialize` needs the heavy parts to load on first use.
    imports = "import offprompt.cli, offprompt.serve.app, offprompt.memory.task_memory"
    assert loaded_by(imports, ["chromadb", "onnxruntime", "tokenizers"]) == []


async def test_an_unreachable_server_is_named_with_its_place_in_the_config(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    time_server = str(Path(sys.executable).with_name("mcp-server-time"))
    config.write_text(
        '{\n  "mcpServers": {\n    "remote": {"url": "http://127.0.0.1:9/mcp"},\n'
        f'    "time": {{"command": "{time_server}"}}\n  }}\n}}\n'
    )
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        params = StdioServerParameters(command=command, args=args, env=subprocess_env())
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("time__get_current_time", {"timezone": "UTC"})  # waits for its server
            names = {t.name for t in (await session.list_tools()).tools}
    assert "time__get_current_time" in names
    assert f'MCP server "remote" could not be started ({config}:3: mcpServers.remote.url)' in log.read_text()


def test_check_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{\n  "mcpServers": {\n    "fs": {"comand": "npx"},\n    "ok": {"command": "python3"}\n  }\n}\n')
    run = subprocess.run(
        offprompt_command("check", "--config", str(config), "--no-start"), capture_output=True, text=True
    )
    assert run.returncode == 1
    assert f"{config}:3: mcpServers.fs.comand: unknown key 'comand'" in run.stdout
    assert "2 servers: 1 ready, 1 failed, 0 disabled; 1 problems" in run.stdout


def test_check_reports_every_problem_of_every_server_and_the_offprompt_blocks_beside_them(tmp_path: Path) -> None:
    """Each server's problems were one line counted once ("1 problems" for `comand` and `off_promt`), and an error
    in the `offprompt` block hid every server's problems."""
    config = tmp_path / "mcp.json"
    config.write_text(
        "{\n"
        '  "offprompt": {"threshold_tokens": "many"},\n'
        '  "mcpServers": {\n'
        '    "fs": {"comand": "npx", "off_promt": "auto"},\n'
        '    "ok": {"command": "python3"}\n'
        "  }\n"
        "}\n"
    )
    run = subprocess.run(
        offprompt_command("check", "--config", str(config), "--no-start"), capture_output=True, text=True
    )
    assert run.returncode == 1
    assert f'{config}:2: offprompt.threshold_tokens: should be a whole number (got "many")' in run.stdout
    assert f"fs: {config}:4: mcpServers.fs.comand: unknown key 'comand' — did you mean 'command'?" in run.stdout
    assert (
        f"fs: {config}:4: mcpServers.fs.off_promt: unknown key 'off_promt' — did you mean 'off_prompt'?" in run.stdout
    )
    assert "2 servers: 1 ready, 1 failed, 0 disabled; 3 problems" in run.stdout


def test_check_names_a_crashing_servers_line_its_exit_status_and_its_stderrs_last_lines(tmp_path: Path) -> None:
    crash = (
        "import sys; sys.stderr.write('Traceback (most recent call last):\\nImportError: no module foo\\n'); "
        "sys.exit(3)"
    )
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"broken": {"command": sys.executable, "args": ["-c", crash]}}}, indent=2)
    )
    run = subprocess.run(offprompt_command("check", "--config", str(config)), capture_output=True, text=True)
    assert run.returncode == 1
    line = next(line for line in run.stdout.splitlines() if line.startswith("broken: "))
    assert line.startswith(f"broken: {config}:4: mcpServers.broken.command: did not start: ")
    assert line.endswith(
        "(exit status 3; its stderr ended: Traceback (most recent call last): | ImportError: no module foo)"
    )


def test_check_counts_a_server_that_does_not_start_as_failed_and_reports_every_problem(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    crashing = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    typo = {"command": TIME_SERVER, "tools": {"get_curent_time": {}, "convert_tme": {}}}
    config.write_text(json.dumps({"mcpServers": {"dead": crashing, "time": typo}}, indent=2))
    run = subprocess.run(offprompt_command("check", "--config", str(config)), capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"dead: {config}:4: mcpServers.dead.command: did not start: " in run.stdout
    assert "(exit status 3; it wrote nothing on stderr)" in run.stdout
    assert 'no tool "get_curent_time"' in run.stdout
    assert 'no tool "convert_tme"' in run.stdout  # every problem of a server, not the first only
    assert "2 servers: 1 ready, 1 failed, 0 disabled; 3 problems" in run.stdout
    as_json = subprocess.run(
        offprompt_command("check", "--config", str(config), "--json"), capture_output=True, text=True
    )
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert (report["ready"], report["failed"], report["problems"]) == (1, 1, 3)
    by_name = {server["name"]: server for server in report["servers"]}
    assert by_name["dead"]["status"] == "failed"
    assert by_name["time"]["tools"] == ["get_current_time", "convert_time"]
    assert len(by_name["time"]["problems"]) == 2


TIME_SERVER = str(Path(sys.executable).with_name("mcp-server-time"))


def _config_with_a_typo(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    config.write_text(
        '{\n  "mcpServers": {\n    "time": {\n'
        f'      "command": "{TIME_SERVER}",\n'
        '      "tools": {\n        "get_curent_time": {"off_prompt": "always"}\n      }\n    }\n  }\n}\n'
    )
    return config


def test_check_starts_the_servers_and_reports_a_tool_entry_that_names_no_tool(tmp_path: Path) -> None:
    # A typo in a per-tool entry silently left the real tool on "auto": its secrets went into the prompt.
    config = _config_with_a_typo(tmp_path)
    run = subprocess.run(offprompt_command("check", "--config", str(config)), capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "time: 2 tools: get_current_time, convert_time" in run.stdout
    assert (
        f'{config}:6: mcpServers.time.tools.get_curent_time: MCP server "time" has no tool "get_curent_time", '
        'so this entry applies to nothing; did you mean "get_current_time"?'
    ) in run.stdout
    quick = subprocess.run(
        offprompt_command("check", "--config", str(config), "--no-start"), capture_output=True, text=True
    )
    assert quick.returncode == 0
    assert "tools:" not in quick.stdout


async def test_serve_warns_on_stderr_of_a_tool_entry_that_names_no_tool(tmp_path: Path) -> None:
    config = _config_with_a_typo(tmp_path)
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        params = StdioServerParameters(command=command, args=args, env=subprocess_env())
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert "time__get_current_time" in {t.name for t in (await session.list_tools()).tools}
    warnings = [line for line in log.read_text().splitlines() if "get_curent_time" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("offprompt WARNING: ")
    assert f"{config}:6: mcpServers.time.tools.get_curent_time" in warnings[0]
    assert 'did you mean "get_current_time"?' in warnings[0]


def test_check_reports_a_name_two_unprefixed_servers_share(tmp_path: Path) -> None:
    counter = str(Path(__file__).parent / "servers" / "counter.py")
    server = {"command": sys.executable, "args": [counter], "prefix": False}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"one": server, "two": server}}))
    run = subprocess.run(offprompt_command("check", "--config", str(config)), capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        'MCP server "two" lists tool "echo" under its own name ("prefix": false), but MCP server "one" lists a tool '
        'under that name too: "two"\'s tool is left out. Set "prefix": true on "two" or "one" in the offprompt '
        "config (mcpServers.two.prefix)."
    ) in run.stdout
