"""The `offprompt` command."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import anyio

from offprompt._version import __version__
from offprompt.allocator import return_big_buffers
from offprompt.commands import parsers
from offprompt.commands.common import memory_settings
from offprompt.config import (
    LoadedConfig,
    OffpromptSettings,
    StdioServer,
    load_config,
    unknown_tool_entries,
    unknown_tool_message,
)
from offprompt.errors import ConfigError, OffpromptError
from offprompt.memory.ephemeral import EphemeralDirectory, sweep_abandoned
from offprompt.memory.settings import default_data_dir
from offprompt.memory.siblings import open_free
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.http import TransportSettings, add_transport_arguments, transport_settings
from offprompt.serve.http_apps import listen, serve_transport
from offprompt.serve.prelude import FrontCache, Handoff

if TYPE_CHECKING:
    from offprompt.proxy.downstreams import Proxy

logger = logging.getLogger("offprompt")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offprompt", description="Keep large and sensitive tool results off the prompt."
    )
    parser.add_argument("--version", action="version", version=f"offprompt {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--config", type=Path, default=None, help="an mcpServers config file to proxy (JSON)")
    serve.add_argument("--memory-name", default=None, help="which memory to use (one folder each; default: default)")
    serve.add_argument(
        "--data-dir", type=Path, default=None, help=f"where memories live (default {default_data_dir()})"
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.add_argument("--threshold-tokens", type=int, default=None, help="store results over this many tokens")
    serve.add_argument("--preview-tokens", type=int, default=None, help="tokens of a stored result the reference shows")
    serve.add_argument("--ttl-days", type=float, default=None, help="drop stored results after this many days")
    serve.add_argument(
        "--ephemeral", action="store_true", help="keep results in a temporary memory deleted when offprompt exits"
    )
    add_transport_arguments(serve)
    check = commands.add_parser("check", help="read a config file and report every problem in it")
    check.add_argument("--config", type=Path, required=True)
    check.add_argument(
        "--no-start", action="store_true", help="only read the file: do not start the servers to check their tools"
    )
    check.add_argument("--json", action="store_true", help="print the report as JSON (for CI)")
    index = commands.add_parser("index", help="run only the indexer of a shared memory (no serving)")
    index.add_argument("--config", type=Path, required=True, help='a config whose offprompt block sets "postgres"')
    index.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parsers.add(commands)
    return parser


__all__ = ["main", "memory_settings"]

#: How long a server whose client has closed stdin may take to keep the lists for the next start, when they are
#: not kept yet (composing them asks each running server for its prompts: milliseconds; the bound keeps the exit
#: within half a second on a busy machine).
FRONT_KEEP_SECONDS = 0.25


def _read_config(args: argparse.Namespace) -> LoadedConfig:
    if args.config is None:
        return LoadedConfig(settings=OffpromptSettings(), servers={})
    return load_config(args.config)


def _announce(url: str) -> None:
    print(f"offprompt: serving MCP at {url}", file=sys.stderr, flush=True)


async def _serve(
    memory: TaskMemory,
    settings: OffpromptSettings,
    config: LoadedConfig,
    transport: TransportSettings,
    listener: socket.socket | None,
    handoff: Handoff | None,
) -> None:
    from offprompt.results import ResultBoundary, ResultSettings
    from offprompt.serve.app import build_server
    from offprompt.serve.fastlane import FastLane
    from offprompt.serve.front_lists import Kept, keep_front_lists, keep_lists_now, serving_proxy
    from offprompt.serve.stdio import serve_stdio

    proxy = serving_proxy(config, settings.call_timeout_seconds)
    results = ResultBoundary(  # both paths
        memory, ResultSettings.of(settings), sharing=proxy.sharing(), flows_to=proxy.flows_to()
    )
    proxy.redact_lists_with(results.redactor)  # before the servers start: their lists are listed and cached
    # No warm-up here: the tokenizer tables (~80 MB) load with the first result that needs counting, so a client
    # that only lists tools, or whose results all pass by size, never pays for them.
    async with proxy.running():
        server = build_server(memory, proxy, settings, results)
        if transport.transport != "stdio":
            await serve_transport(server, transport, _announce, listener)
            return
        async with anyio.create_task_group() as tg:
            # SIGTERM or SIGHUP (a client quitting) ends the session cleanly: downstreams stopped, memory closed.
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            tg.start_soon(_announce_stdio, memory, settings, proxy)
            kept = Kept()
            if handoff is not None:  # the next start's prelude lists from these
                tg.start_soon(keep_front_lists, handoff.front, proxy, kept)
            await serve_stdio(server, FastLane(proxy, results), handoff)
            if handoff is not None and proxy.is_ready and not kept.now:
                # A client that closes stdin at its tools/list answer would cancel the keeping above before its
                # first save: keep them now, so the next start answers from them.
                with anyio.move_on_after(FRONT_KEEP_SECONDS) as bounded:
                    await keep_lists_now(handoff.front, proxy)
                if bounded.cancelled_caught:
                    logger.info("the lists were not kept for the next start within %.2f s", FRONT_KEEP_SECONDS)
            tg.cancel_scope.cancel()


async def _announce_stdio(memory: TaskMemory, settings: OffpromptSettings, proxy: Proxy) -> None:
    """One line on stderr once the servers have answered (serving does not wait for it): where results go and
    what is proxied; on a terminal, that offprompt now waits for a client on stdin."""
    if sys.stdin.isatty():
        print(
            "offprompt: waiting for an MCP client on stdin (a client starts `offprompt serve` itself; "
            "press Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )
    from offprompt.tools import TOOLS

    await proxy.ready()  # every server has had its first start (a failed one is logged on its own)
    where = memory_settings(settings).data_dir.expanduser() / memory.name
    running = [name for name, d in proxy.downstreams.items() if d.running]
    servers = f"{len(running)}/{len(proxy.downstreams)} servers ({', '.join(running) or 'none'})"
    print(
        f"offprompt: memory {where}; {servers}; {len(proxy.routes()) + len(TOOLS)} tools",
        file=sys.stderr,
        flush=True,
    )


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for received in signals:
            logger.info("stopping on %s", signal.Signals(received).name)
            scope.cancel()
            return


def _check(args: argparse.Namespace) -> int:
    """Read the config, start every server (unless --no-start) and report each one: ready or failed, its tools,
    and every problem; exit 1 when any server failed or has a problem."""
    config = load_config(args.config, keep_going=True)  # the offprompt block's problems beside the servers'
    reports = {
        name: _ServerReport(name, "failed", problems=[f"{name}: {problem}" for problem in found])
        for name, found in config.server_problems.items()
    }
    for name in config.disabled:
        reports[name] = _ServerReport(name, "disabled")
    for name in config.servers:
        reports[name] = _ServerReport(name, "ready" if args.no_start else "failed")
    if not args.no_start:
        anyio.run(_check_servers, config, reports, FrontCache.for_config(args.config))
    ordered = [reports[name] for name in _file_order(config, reports)]
    counts = {status: sum(1 for r in ordered if r.status == status) for status in ("ready", "failed", "disabled")}
    problems = sum(len(r.problems) for r in ordered) + len(config.warnings) + len(config.file_problems)
    if args.json:
        print(
            json.dumps(
                {
                    "servers": [dataclasses.asdict(r) for r in ordered],
                    "file_problems": list(config.file_problems),
                    "warnings": list(config.warnings),
                    **counts,
                    "problems": problems,
                },
                indent=2,
            )
        )
    else:
        for problem in config.file_problems:
            print(problem)
        for warning in config.warnings:
            print(f"warning: {warning}")
        for report in ordered:
            print(report.text())
        print(
            f"{len(ordered)} servers: {counts['ready']} ready, {counts['failed']} failed, {counts['disabled']} "
            f"disabled; {problems} problems"
        )
    return 1 if counts["failed"] or problems else 0


@dataclasses.dataclass
class _ServerReport:
    """What `offprompt check` found of one server."""

    name: str
    status: str  # "ready", "failed" or "disabled"
    tools: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    def text(self) -> str:
        if self.status == "disabled":
            return f"{self.name}: disabled"
        lines = []
        if self.status == "ready" and self.tools:
            shown = ", ".join(self.tools[:_SHOWN_TOOLS])
            more = f", … ({len(self.tools)} in all)" if len(self.tools) > _SHOWN_TOOLS else ""
            lines.append(f"{self.name}: {len(self.tools)} tools: {shown}{more}")
        elif self.status == "ready" and not self.problems:
            lines.append(f"{self.name}: ready")
        return "\n".join([*lines, *self.problems])


def _file_order(config: LoadedConfig, reports: dict[str, _ServerReport]) -> list[str]:
    """The servers in the order the file lists them."""
    return sorted(reports, key=lambda name: config.lines.get((config.servers_key, name), 1 << 30))


async def _check_servers(config: LoadedConfig, reports: dict[str, _ServerReport], front: FrontCache | None) -> None:
    """Start every server and fill in its report: its tools, a failed start or listing, per-tool entries that
    name none of its tools, unprefixed names that clash, and tools its cached list had that it lists no more.
    The lists `serve` would answer are kept for its next start (`front`), so its first lists are whole."""
    from offprompt.secrets import Redactor
    from offprompt.serve.front_lists import composed_lists, serving_proxy

    logging.getLogger("offprompt").setLevel(logging.CRITICAL)  # the report says each problem once, in order
    proxy = serving_proxy(config)
    # The lists it keeps hold handles, never secrets; their values stay in this process (a resource whose URI held
    # one reads once its server has started again and listed it).
    proxy.redact_lists_with(Redactor(None, proxy.sharing()))
    cached = {name: d.cached_tools for name, d in proxy.downstreams.items()}
    async with proxy.running():
        await proxy.ready()
        if front is not None:
            front.save(await composed_lists(proxy))
        for name, downstream in proxy.downstreams.items():
            report = reports[name]
            if not downstream.running:
                report.problems.append(await _did_not_start(config, name, downstream.error))
                continue
            report.status = "ready"
            report.tools = [t.name for t in downstream.tools]
            for entry, suggestion in unknown_tool_entries(downstream.config, report.tools):
                report.problems.append(
                    unknown_tool_message(config.place(name, "tools", entry), name, entry, suggestion)
                )
            gone = sorted({t.name for t in cached[name] or []} - set(report.tools))
            if gone:
                report.problems.append(f"{name}: no longer lists {', '.join(gone)}, which it listed before")
        proxy.routes()
        for duplicate in proxy.duplicates:  # a tool listed more than once: kept apart, said here too
            listing = next(name for name in reports if duplicate.startswith(f'MCP server "{name}" lists'))
            reports[listing].problems.append(duplicate)
        for collision in proxy.collisions:  # unprefixed names that clash ("prefix": false): the first one it names
            clashing = next(name for name in reports if collision.startswith(f'MCP server "{name}" lists'))
            reports[clashing].problems.append(collision)


_SHOWN_TOOLS = 12


async def _did_not_start(config: LoadedConfig, name: str, error: str | None) -> str:
    """One line: where the server's command or url is, that it did not start, and why (a local server that
    exits: its exit status and its stderr's last lines)."""
    server = config.servers[name]
    place = config.place(name, "command" if isinstance(server, StdioServer) else "url")
    reason = error or "no answer in time"
    if isinstance(server, StdioServer):
        from offprompt.commands.diagnose import how_it_ended

        ended = await how_it_ended(server, _DIAGNOSE_SECONDS)
        reason = f"{reason} ({ended})" if ended else reason
    return f"{name}: {place}: did not start: {reason}"


#: How long `check` gives a server that did not start to show how it ends, run once more with its stderr kept.
_DIAGNOSE_SECONDS = 10.0


def main(argv: Sequence[str] | None = None, *, handoff: Handoff | None = None) -> int:
    """`handoff`: what `launch`'s prelude read from stdin and answered before this module was imported."""
    args = _parser().parse_args(argv)
    # stdout is the stdio transport: everything else goes to stderr.
    logging.basicConfig(
        level=getattr(args, "log_level", "INFO"), stream=sys.stderr, format="offprompt %(levelname)s: %(message)s"
    )
    if args.command != "serve":
        return _run_command(args)
    return_big_buffers()  # a 10 MB result's buffers are given back once freed, not kept resident
    # What killed offprompt processes left behind goes now, beside the start (the directories may be big).
    threading.Thread(target=sweep_abandoned, name="offprompt-sweep", daemon=True).start()
    ephemeral = EphemeralDirectory() if args.ephemeral else None
    try:
        code = _run_serve(args, str(ephemeral.path) if ephemeral is not None else None, handoff)
    finally:
        if ephemeral is not None:
            ephemeral.remove()
    _exit_now(code)


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown. What must last is on disk by now (a stored text is
    durable before its reference goes out; unfinished indexing resumes at the next start); what is left are
    daemon threads, an embedding batch among them, that the teardown would wait for or abort inside the model's
    C++ runtime ("terminate called without an active exception")."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _run_command(args: argparse.Namespace) -> int:
    """A command other than `serve`: its module is imported only now."""
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "memory":
            from offprompt.commands import memory

            return memory.run(args)
        if args.command == "memories":
            from offprompt.commands import memory

            return memory.run_memories(args)
        if args.command == "stats":
            from offprompt.commands import stats

            return stats.run(args)
        if args.command == "index":
            from offprompt.commands import index

            return index.run(args)
        if args.command == "init":
            from offprompt.commands import clients

            return clients.run(args)
    except (ConfigError, OffpromptError) as exc:
        print(f"offprompt: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `offprompt memory cat … | head`
        return 0
    raise AssertionError(f"unknown command {args.command}")


def _run_serve(args: argparse.Namespace, ephemeral: str | None, handoff: Handoff | None) -> int:
    try:
        config = _read_config(args)
        settings = config.settings.override(
            memory_name=args.memory_name,
            data_dir=Path(ephemeral) if ephemeral is not None else args.data_dir,
            threshold_tokens=args.threshold_tokens,
            preview_tokens=args.preview_tokens,
            ttl_days=args.ttl_days,
        )
        transport = transport_settings(
            args,
            max_sessions_per_token=settings.max_sessions_per_token,
            session_idle_seconds=settings.session_idle_seconds,
        )
        listener = listen(transport)
        memory = open_free(memory_settings(settings))
    except (ConfigError, OffpromptError) as exc:
        print(f"offprompt: {exc}", file=sys.stderr)
        return 2
    for name, problem in config.problems.items():
        logger.error('MCP server "%s" is left out: %s', name, problem)
    try:
        anyio.run(
            _serve,
            memory,
            settings,
            config,
            transport,
            listener,
            handoff,
            backend_options={"use_uvloop": _has_uvloop()},
        )
    except KeyboardInterrupt:
        pass
    finally:
        _ignore_stop_signals()  # a client sends SIGINT, then SIGTERM, within half a second: this stop is bounded
        if ephemeral is not None:
            # Gone first: closing the memory waits (briefly) for its indexers, which write nothing once their text
            # is gone. Windows keeps open files: there the directory goes after close, in main.
            shutil.rmtree(ephemeral, ignore_errors=True)
        memory.close(wait=STOP_WAIT_SECONDS)
    return 0


#: How long a stop waits for the indexers' batch under way: none. A client kills a server that is slow to stop,
#: and an embedding batch cut off resumes at the next start (the text itself was on disk before its reference).
STOP_WAIT_SECONDS = 0.0


def _ignore_stop_signals() -> None:
    if sys.platform == "win32":
        return
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)


def _has_uvloop() -> bool:
    """uvloop (which uvicorn brings) makes each relayed message cheaper; plain asyncio works too."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return sys.platform != "win32"
