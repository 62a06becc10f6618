"""The arguments of the store, stats and init commands (standard library only: `serve` imports this)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

CLIENTS = (
    "claude-code",
    "claude-desktop",
    "cursor",
    "vscode",
    "windsurf",
    "gemini",
    "qwen-code",
    "opencode",
    "codex",
    "fast-agent",
)  # offprompt.commands.client_table.CLIENTS, named here without importing it (serve imports this module)


def _memory_flags(parser: argparse.ArgumentParser, *, name: bool = True, nested: bool = False) -> None:
    # A nested subcommand leaves unset flags alone, so `memories --data-dir D rm X` keeps D.
    unset: Any = argparse.SUPPRESS if nested else None
    if name:
        parser.add_argument("--memory-name", default=unset, help="which memory (default: default)")
    parser.add_argument("--data-dir", type=Path, default=unset, help="where memories live (as serve takes it)")
    parser.add_argument("--config", type=Path, default=unset, help="an offprompt config file to take settings from")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if nested else False)


def _wait_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true", help="wait for the server holding the memory to stop")


def add(commands: Any) -> None:
    """Add `memory`, `memories`, `stats` and `init` to the `offprompt` subcommands."""
    _add_memory(commands.add_parser("memory", help="look into one memory and clean it"))

    memories = commands.add_parser("memories", help="every memory in the data directory, or `rm NAME`")
    _memory_flags(memories, name=False)
    sub = memories.add_subparsers(dest="verb")
    memories_rm = sub.add_parser("rm", help="delete a whole memory")
    memories_rm.add_argument("name")
    _wait_flag(memories_rm)
    _memory_flags(memories_rm, name=False, nested=True)

    stats = commands.add_parser("stats", help="what offprompt kept off the prompt, per server and tool")
    stats.add_argument("--since", default=None, help="from this time (ISO date/time, or e.g. 2h, 7d ago)")
    stats.add_argument("--until", default=None, help="up to this time (same forms)")
    _memory_flags(stats)

    _add_init(commands.add_parser("init", help="put offprompt in front of a client's MCP servers"))


def _add_memory(memory: argparse.ArgumentParser) -> None:
    """`offprompt memory ls|show|cat|grep|query|rm|gc|reindex`."""
    verbs = memory.add_subparsers(dest="verb", required=True)
    _memory_flags(verbs.add_parser("ls", help="what the memory holds, newest first"))
    show = verbs.add_parser("show", help="one namespace: where it came from, its items, its indexing")
    show.add_argument("namespace")
    _memory_flags(show)
    cat = verbs.add_parser("cat", help="the raw text (or blob) of an item, to stdout or a file")
    cat.add_argument("namespace")
    cat.add_argument("--item", type=int, default=0)
    start = cat.add_mutually_exclusive_group()
    start.add_argument("--line", type=int, default=None, help="start at this line (1 is the first)")
    start.add_argument("--offset", type=int, default=None, help="start at this token offset (as memory_load takes)")
    cat.add_argument("-o", "--output", type=Path, default=None, help="write to this file")
    _memory_flags(cat)
    grep = verbs.add_parser("grep", help="lines that match a regular expression")
    grep.add_argument("pattern")
    grep.add_argument("--namespace", default=None)
    grep.add_argument("--max", type=int, default=50, dest="max_matches")
    _memory_flags(grep)
    query = verbs.add_parser("query", help="the passages that best answer a question")
    query.add_argument("text")
    query.add_argument("--namespace", default=None)
    query.add_argument("--top-k", type=int, default=5)
    _memory_flags(query)
    rm = verbs.add_parser("rm", help="delete a namespace")
    rm.add_argument("namespace", nargs="+")
    _wait_flag(rm)
    _memory_flags(rm)
    gc = verbs.add_parser("gc", help="drop expired namespaces, orphaned payloads and leftover files")
    _wait_flag(gc)
    _memory_flags(gc)
    reindex = verbs.add_parser("reindex", help="rebuild the word and vector indexes (after an embedding change)")
    _wait_flag(reindex)
    _memory_flags(reindex)


def _add_init(init: argparse.ArgumentParser) -> None:
    """`offprompt init --client NAME`."""
    init.add_argument("--client", choices=CLIENTS, required=True)
    init.add_argument("--config", type=Path, default=None, help="the client's config file (default: where it is)")
    init.add_argument(
        "--offprompt-config",
        type=Path,
        default=None,
        help="offprompt's config file for this client (default: <client>.json in offprompt's config dir)",
    )
    init.add_argument(
        "--project",
        type=Path,
        default=None,
        help="the project whose Claude Code local-scope servers move too, whose shared files are named, and where "
        "fast-agent's file is (default: this directory)",
    )
    init.add_argument("--yes", action="store_true", help="write without asking")
    init.add_argument(
        "--no-start", action="store_true", help="only write the files: do not start the servers to list their tools"
    )
    init.add_argument("--undo", action="store_true", help="restore the client's config from the latest backup")
