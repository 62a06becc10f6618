"""What a section returns, the JSON writer, the table printer and the machine description."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["met", "missed", "info", "skipped"]


@dataclass(slots=True)
class Row:
    """One figure of the table. `target` is a human-readable bound; `status` says whether it held."""

    metric: str
    value: float | int | str | None
    unit: str = ""
    target: str = ""
    status: Status = "info"
    note: str = ""

    def shown(self) -> str:
        if self.value is None:
            return "—"
        if isinstance(self.value, float):
            v = self.value
            text = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:,.1f}"
        elif isinstance(self.value, int):
            text = f"{self.value:,}"
        else:
            text = self.value
        return f"{text} {self.unit}".strip()


def check(
    metric: str,
    value: float,
    unit: str,
    *,
    at_most: float | None = None,
    at_least: float | None = None,
    target: str = "",
    note: str = "",
) -> Row:
    """A row whose status follows from a bound."""
    ok = (at_most is None or value <= at_most) and (at_least is None or value >= at_least)
    return Row(metric, value, unit, target, "met" if ok else "missed", note)


@dataclass(slots=True)
class SectionResult:
    name: str
    title: str
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "seconds": round(self.seconds, 1),
            "error": self.error,
            "rows": [
                {
                    "metric": r.metric,
                    "value": r.value,
                    "unit": r.unit,
                    "target": r.target,
                    "status": r.status,
                    "note": r.note,
                }
                for r in self.rows
            ],
            "notes": self.notes,
            "data": self.data,
        }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    import psutil

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "load_average_at_start": load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            d: _version(d)
            for d in (
                "offprompt",
                "mcp",
                "chromadb",
                "onnxruntime",
                "tiktoken",
                "numpy",
                "fastmcp",
                "mcp-server-git",
                "mcp-server-time",
                "mcp-server-fetch",
            )
        },
    }


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: a figure measured on a busy machine says so under its table."""
    return [round(x, 2) for x in os.getloadavg()]


def invocation(module: str) -> str:
    """This process's command line as `python -m MODULE ARGS`, the command a results file names."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


def stamp(command: str, load_at_start: list[float]) -> dict[str, Any]:
    """What a results file says of its run, at its top; call it as the run ends. `python -m bench.figures`
    prints it under every table it makes from the file."""
    return {
        "command": command,
        "commit": commit(),
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "load_average_at_start": load_at_start,
        "load_average_at_end": load_average(),
    }


def commit() -> str:
    """The commit the bench ran at, `+dirty` when the tree had changes: the tables made from the file name it.
    Results files are left out: one run's file, written before the next run, changes nothing measured."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ":/", ":(exclude,top)bench/results")
    return head + ("+dirty" if changed else "")


def sections_from_json(doc: dict[str, Any]) -> list[SectionResult]:
    """The sections of a results file, as `table` takes them."""
    found = []
    for name, s in doc["sections"].items():
        rows = [Row(r["metric"], r["value"], r["unit"], r["target"], r["status"], r["note"]) for r in s["rows"]]
        found.append(SectionResult(name, s["title"], rows, notes=s["notes"], error=s["error"]))
    return found


def write_json(path: Path, command: str, meta: dict[str, Any], sections: list[SectionResult]) -> None:
    """Write a run's results; `meta` is `machine()` as the run started, its load average the one at the start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": command,
        "commit": commit(),
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {**meta, "load_average_at_end": load_average()},
        "sections": {s.name: s.to_json() for s in sections},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


STATUS_MARK = {"met": "✅ met", "missed": "❌ missed", "info": "", "skipped": "skipped"}


def table(sections: list[SectionResult]) -> str:
    """A Markdown table of every row, grouped by section: readable in a terminal and pastable in a Markdown page."""
    lines = ["| section | metric | value | target | |", "| --- | --- | ---: | --- | --- |"]
    for s in sections:
        if s.error:
            lines.append(f"| {s.title} | **failed** | — | | {s.error.splitlines()[0][:80]} |")
        for r in s.rows:
            note = f" ({r.note})" if r.note else ""
            lines.append(f"| {s.title} | {r.metric}{note} | {r.shown()} | {r.target} | {STATUS_MARK[r.status]} |")
    return "\n".join(lines)
