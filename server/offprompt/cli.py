"""The `offprompt` command."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio

from offprompt import tokens
from offprompt._version import __version__
from offprompt.config import LoadedConfig, OffpromptSettings, StdioServer, load_config
from offprompt.errors import ConfigError, OffpromptError
from offprompt.memory.siblings import open_free
from offprompt.memory.storage import EmbeddingSpec
from offprompt.memory.task_memory import MemorySettings, TaskMemory, default_data_dir
from offprompt.serve.http import TransportSettings, add_transport_arguments, listen, serve_transport, transport_settings

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
    add_transport_arguments(serve)
    check = commands.add_parser("check", help="read a config file and report every problem in it")
    check.add_argument("--config", type=Path, required=True)
    return parser


def memory_settings(settings: OffpromptSettings) -> MemorySettings:
    """The memory a config's `offprompt` block describes."""
    return MemorySettings(
        name=settings.memory_name,
        data_dir=settings.data_dir or default_data_dir(),
        chroma=settings.chroma.mode,
        chroma_url=settings.chroma.url,
        ttl_seconds=settings.ttl_days * 86400 if settings.ttl_days else None,
        max_bytes=settings.max_bytes,
        embedding=EmbeddingSpec(settings.embedding.name, dict(settings.embedding.config)),
    )


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
) -> None:
    from offprompt.proxy.downstreams import Proxy
    from offprompt.results import ResultBoundary, ResultSettings
    from offprompt.serve.app import build_server
    from offprompt.serve.fastlane import FastLane
    from offprompt.serve.stdio import serve_stdio

    places = {
        name: config.place(name, "command" if isinstance(server, StdioServer) else "url")
        for name, server in config.servers.items()
    }
    proxy = Proxy(config.servers, default_timeout=settings.call_timeout_seconds, places=places, intent=settings.intent)
    # The tokenizer tables load in the background: start-up stays quick, the first large result doesn't wait.
    threading.Thread(target=tokens.warm_up, name="offprompt-warm-up", daemon=True).start()
    async with proxy.running():
        results = ResultBoundary(memory, ResultSettings.of(settings))  # one boundary for both paths
        server = build_server(memory, proxy, settings, results)
        if transport.transport != "stdio":
            await serve_transport(server, transport, _announce, listener)
            return
        async with anyio.create_task_group() as tg:
            # SIGTERM or SIGHUP (a client quitting) ends the session cleanly: downstreams stopped, memory closed.
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            await serve_stdio(server, FastLane(proxy, results))
            tg.cancel_scope.cancel()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for received in signals:
            logger.info("stopping on %s", signal.Signals(received).name)
            scope.cancel()
            return


def _check(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    for warning in config.warnings:
        print(f"warning: {warning}")
    for name, problem in config.problems.items():
        print(f"{name}: {problem}")
    print(f"{len(config.servers)} servers ready, {len(config.problems)} with problems, {len(config.disabled)} disabled")
    return 1 if config.problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # stdout is the stdio transport: everything else goes to stderr.
    logging.basicConfig(
        level=getattr(args, "log_level", "INFO"), stream=sys.stderr, format="offprompt %(levelname)s: %(message)s"
    )
    try:
        if args.command == "check":
            return _check(args)
        config = _read_config(args)
        settings = config.settings.override(memory_name=args.memory_name, data_dir=args.data_dir)
        transport = transport_settings(args)
        listener = listen(transport)
        memory = open_free(memory_settings(settings))
    except (ConfigError, OffpromptError) as exc:
        print(f"offprompt: {exc}", file=sys.stderr)
        return 2
    for name, problem in config.problems.items():
        logger.error('MCP server "%s" is left out: %s', name, problem)
    try:
        anyio.run(_serve, memory, settings, config, transport, listener, backend_options={"use_uvloop": _has_uvloop()})
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()
    return 0


def _has_uvloop() -> bool:
    """uvloop (which uvicorn brings) makes each relayed message cheaper; plain asyncio works too."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return sys.platform != "win32"
