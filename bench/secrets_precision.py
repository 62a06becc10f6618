"""False alarms of the secret detector on real code nobody tuned it on: handles per MB, and every hit listed.

    .venv/bin/python -m bench.secrets_precision [--part tuned|held-out|all]

The corpus is code and docs already on the machine, split once, before any change to the detector, into a part
the detector may be fixed against and a held-out part that only reports (`PARTS` below; the versions are
checked, so a run on other versions says so instead of comparing unlike with unlike):

- tuned: the Python standard library's top-level modules and packages `a`-`m` (site-packages left out);
- held-out: the standard library `n`-`z`, Node's bundled API docs (`/usr/share/doc/nodejs/api`), npm's own
  JavaScript (`/usr/lib/node_modules/npm/lib`), and the installed sources of five libraries offprompt uses.

None of these files holds a live-looking key, so every finding is a false alarm (the listing shows each, with
its line). Writes `bench/results/secrets-precision.json`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.report import invocation, load_average, stamp
from offprompt.secrets import find_secrets

RESULTS = Path(__file__).parent / "results" / "secrets-precision.json"
SUFFIXES = {".py", ".md", ".js", ".mjs", ".cjs", ".json", ".txt", ".rst", ".cfg", ".toml", ".ini"}
STDLIB = Path(sysconfig.get_paths()["stdlib"])
LIBRARIES = ("pydantic", "starlette", "httpx", "anyio", "mcp")
PINNED = {"python": "3.11.7", "node": "v20.20.2"}


def _stdlib(first: str, last: str) -> list[Path]:
    return sorted(p for p in STDLIB.iterdir() if p.name != "site-packages" and first <= p.name[:1].lower() <= last)


def _library(name: str) -> Path:
    files = importlib.metadata.files(name) or []
    top = next(f for f in files if f.name == "__init__.py" and len(f.parts) == 2)
    return Path(str(top.locate())).parent


PARTS = {
    "tuned": lambda: _stdlib("a", "m"),
    "held-out": lambda: [
        *_stdlib("n", "z"),
        Path("/usr/share/doc/nodejs/api"),
        Path("/usr/lib/node_modules/npm/lib"),
        *(_library(name) for name in LIBRARIES),
    ],
}


def _files(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found += sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return found


def measure(part: str) -> dict[str, Any]:
    total, hits = 0, []
    started = time.perf_counter()
    for path in _files(PARTS[part]()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        total += len(text.encode())
        for finding in find_secrets(text):
            line = text.count("\n", 0, finding.start) + 1
            context = text[max(0, finding.start - 50) : finding.end + 20].replace("\n", "⏎")
            hits.append({"file": str(path), "line": line, "kind": finding.kind, "context": context})
    mb = total / 1e6
    return {
        "megabytes": round(mb, 2),
        "false_alarms": len(hits),
        "per_mb": round(len(hits) / mb, 3) if mb else 0.0,
        "by_kind": dict(Counter(h["kind"] for h in hits).most_common()),
        "seconds": round(time.perf_counter() - started, 1),
        "hits": hits,
    }


def _versions() -> dict[str, str]:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    found = {"python": platform.python_version(), "node": node}
    found.update({name: importlib.metadata.version(name) for name in LIBRARIES})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--show", type=int, default=40, help="how many hits of each part to print")
    args = parser.parse_args()
    load = load_average()
    versions = _versions()
    unlike = {k: (v, versions.get(k)) for k, v in PINNED.items() if versions.get(k) != v}
    if unlike:
        print(f"note: other versions than the pinned ones: {unlike}", file=sys.stderr)
    parts = list(PARTS) if args.part == "all" else [args.part]
    report = {"versions": versions, "parts": {part: measure(part) for part in parts}}
    print("| part | MB | false alarms | per MB | by kind |\n| --- | --- | --- | --- | --- |")
    for part, got in report["parts"].items():
        print(f"| {part} | {got['megabytes']} | {got['false_alarms']} | {got['per_mb']} | {got['by_kind']} |")
    for part, got in report["parts"].items():
        for hit in got["hits"][: args.show]:
            print(f"{part}: {hit['file']}:{hit['line']}: {hit['kind']}: {hit['context']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**stamp(invocation("bench.secrets_precision"), load), **report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
