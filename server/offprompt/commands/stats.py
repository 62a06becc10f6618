"""`offprompt stats`: what offprompt kept off the prompt, per server and tool, per memory and overall.

The figures are counted while offprompt runs (see :mod:`offprompt.memory.usage`) and read here from each
memory's catalog, read-only, so a running server is not disturbed. Tokens saved = tokens of the stored results
minus tokens of the references the model got instead, minus tokens the model read back through the memory tools.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offprompt.commands.common import memory_settings, settings_from
from offprompt.commands.table import iso, size, table
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.catalog import Catalog, UsageRow
from offprompt.memory.usage import OWN_SERVER

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str | None, now: float | None = None) -> float | None:
    """Seconds since the epoch for `2h` / `7d` (that long ago) or an ISO date or date-time (local time)."""
    if text is None:
        return None
    relative = _RELATIVE.match(text.strip())
    if relative:
        return (now if now is not None else time.time()) - float(relative[1]) * _UNIT_SECONDS[relative[2]]
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InvalidArgumentError(
            f"cannot read the time {text!r}: give an ISO date or date-time (2026-11-30, 2026-11-30T12:00) "
            "or how long ago (30m, 2h, 7d)"
        ) from None


@dataclass(slots=True)
class ToolStats:
    server: str
    tool: str
    inline: int = 0
    inline_bytes: int = 0
    stored: int = 0
    stored_bytes: int = 0
    stored_tokens: int = 0
    reference_tokens: int = 0
    reads: int = 0
    read_tokens: int = 0


@dataclass(slots=True)
class MemoryStats:
    memory_name: str
    tools: list[ToolStats] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(int(getattr(t, name)) for t in self.tools)

    @property
    def saved(self) -> int:
        return self.total("stored_tokens") - self.total("reference_tokens") - self.total("read_tokens")

    def to_json(self) -> dict[str, Any]:
        names = ("inline", "inline_bytes", "stored", "stored_bytes", "stored_tokens", "reference_tokens")
        return {
            "memory_name": self.memory_name,
            "tools": [
                {k: getattr(t, k) for k in ("server", "tool", *names, "reads", "read_tokens")} for t in self.tools
            ],
            "totals": {k: self.total(k) for k in (*names, "reads", "read_tokens")},
            "tokens_saved": self.saved,
        }


def collect(memory_name: str, rows: Sequence[UsageRow]) -> MemoryStats:
    by_tool: dict[tuple[str, str], ToolStats] = {}
    for row in rows:
        t = by_tool.setdefault((row.server, row.tool), ToolStats(row.server, row.tool))
        if row.kind == "inline":
            t.inline += row.count
            t.inline_bytes += row.bytes
        elif row.kind == "stored":
            t.stored += row.count
            t.stored_bytes += row.bytes
            t.stored_tokens += row.tokens
            t.reference_tokens += row.model_tokens
        elif row.kind == "read":
            t.reads += row.count
            t.read_tokens += row.model_tokens
    return MemoryStats(memory_name, sorted(by_tool.values(), key=lambda t: (t.server == OWN_SERVER, t.server, t.tool)))


def _memories(args: argparse.Namespace) -> list[tuple[str, Path]]:
    settings = memory_settings(settings_from(args))
    data_dir = settings.data_dir.expanduser()
    if args.memory_name is not None:
        path = settings.directory / "catalog.sqlite3"
        if not path.exists():
            raise NotFoundError(f'there is no memory "{settings.name}" in {data_dir}: `offprompt memories` lists them')
        return [(settings.name, path)]
    return [(p.parent.name, p) for p in sorted(data_dir.glob("*/catalog.sqlite3"))] if data_dir.is_dir() else []


def run(args: argparse.Namespace) -> int:
    since, until = parse_time(args.since), parse_time(args.until)
    found: list[MemoryStats] = []
    for name, path in _memories(args):
        catalog = Catalog(path, readonly=True)
        try:
            found.append(collect(name, catalog.usage(since, until)))
        finally:
            catalog.close()
    overall = MemoryStats("(all)", [t for m in found for t in m.tools])
    if args.json:
        print(
            json.dumps(
                {
                    "since": iso(since),
                    "until": iso(until),
                    "memories": [m.to_json() for m in found],
                    "overall": overall.to_json()["totals"] | {"tokens_saved": overall.saved},
                },
                indent=2,
            )
        )
        return 0
    span = f"since {iso(since)}" if since else "since the start"
    if until:
        span += f", until {iso(until)}"
    shown = [m for m in found if m.tools]
    if not shown:
        print(f"nothing counted yet ({span}): offprompt counts the results it passes while it serves")
        return 0
    for m in shown:
        print(f'memory "{m.memory_name}" ({span})')
        print(_table(m))
        print(f"tokens saved: {m.saved:,}\n")
    if len(shown) > 1:
        print(f"overall: {overall.total('stored'):,} results stored, {overall.saved:,} tokens saved")
    return 0


def _table(m: MemoryStats) -> str:
    rows = [
        (
            t.server,
            t.tool,
            t.inline or "",
            size(t.inline_bytes) if t.inline else "",
            t.stored or "",
            f"{t.stored_tokens:,}" if t.stored else "",
            f"{t.reference_tokens:,}" if t.stored else "",
            t.reads or "",
            f"{t.read_tokens:,}" if t.reads else "",
        )
        for t in m.tools
    ]
    header = (
        "SERVER",
        "TOOL",
        "INLINE",
        "INLINE SIZE",
        "STORED",
        "STORED TOKENS",
        "REF TOKENS",
        "READS",
        "READ TOKENS",
    )
    return table(header, rows, right=(2, 3, 4, 5, 6, 7, 8))
