"""The `offprompt` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from offprompt import __version__
from offprompt.errors import OffpromptError
from offprompt.memory import MemorySettings, TaskMemory, default_data_dir


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offprompt", description=__doc__)
    parser.add_argument("--version", action="version", version=f"offprompt {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--memory-name", default="default", help="which memory to use (one folder each)")
    serve.add_argument(
        "--data-dir", type=Path, default=None, help=f"where memories live (default {default_data_dir()})"
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


async def _serve_stdio(memory: TaskMemory) -> None:
    from mcp.server.stdio import stdio_server

    from offprompt.app import build_server

    server = build_server(memory)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # stdout is the stdio transport: everything else goes to stderr.
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="offprompt %(levelname)s %(name)s: %(message)s")
    settings = MemorySettings(name=args.memory_name, data_dir=args.data_dir or default_data_dir())
    try:
        memory = TaskMemory.open(settings)
    except OffpromptError as exc:
        print(f"offprompt: {exc}", file=sys.stderr)
        return 2
    try:
        anyio.run(_serve_stdio, memory)
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()
    return 0
