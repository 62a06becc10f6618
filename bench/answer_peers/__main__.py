"""Tokens to answer beside sift-gateway and context-mode: the same outputs, the same questions, over MCP stdio.

    .venv/bin/python -m bench.answer_peers.systems install   # once: the peers, pinned, into bench/.peers
    .venv/bin/python -m bench.answer_peers                   # writes bench/results/answer_peers.json

The outputs and questions (bench/retrieval/data/peers/) were fixed before the first run; nothing is tuned on
them. Each system runs as a subprocess behind the MCP SDK's stdio client and serves the same three files;
readers.py says what each scripted reader does. Tokens are o200k_base over every text the model is given by a
tool call (tool call arguments and the listed tools are not counted; the listed tools are reported beside).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import anyio

from bench.answer_peers.outputs import load_questions, write_outputs
from bench.answer_peers.readers import READERS, answer
from bench.answer_peers.systems import NAMES, available, serve
from bench.report import invocation, load_average, stamp
from offprompt.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "results" / "answer_peers.json"
#: A model reads the reference before it asks: a result is a few seconds old by its first search.
PAUSE_S = 3.0


def summary(rows: list[dict[str, Any]], tools_tokens: int) -> dict[str, Any]:
    tokens = sorted(r["tokens"] for r in rows)
    return {
        "answered": f"{sum(r['answered'] for r in rows)} of {len(rows)}",
        "tokens_p50": statistics.median(tokens),
        "tokens_p90": tokens[int(0.9 * (len(tokens) - 1))],
        "tokens_total": sum(tokens),
        "calls_total": sum(r["calls"] for r in rows),
        "calls_p50": statistics.median(r["calls"] for r in rows),
        "tools_list_tokens": tools_tokens,
    }


def breakdown(report: dict[str, Any], names: list[str]) -> None:
    """Per question, each system's tokens (a miss marked); per system, the tokens each tool's results cost."""
    ran = [n for n in names if "rows" in report.get(n, {})]
    cells: dict[str, dict[str, str]] = {}
    for name in ran:
        for row in report[name]["rows"]:
            cells.setdefault(row["id"], {})[name] = f"{row['tokens']:,}" + ("" if row["answered"] else " (missed)")
        by_tool: dict[str, int] = {}
        for row in report[name]["rows"]:
            for step in row["steps"]:
                tool, cost = step.rsplit(" ", 1)
                by_tool[tool] = by_tool.get(tool, 0) + int(cost)
        report[name]["by_tool"] = by_tool
    report["by_question"] = cells


async def run_system(name: str, docs: Path, work: Path) -> dict[str, Any]:
    questions = load_questions()
    async with serve(name, docs, work / name) as served:
        listed = (await served.session.list_tools()).tools
        tools_tokens = count_tokens(json.dumps([t.model_dump(mode="json", exclude_none=True) for t in listed]))
        rows = []
        for q in questions:
            reader = READERS[name](served, q)
            rows.append(await answer(reader, PAUSE_S))
            print(f"  {name} {q.id}: {rows[-1]}", flush=True)
    return {"summary": summary(rows, tools_tokens), "rows": rows}


async def run(names: list[str]) -> dict[str, Any]:
    report: dict[str, Any] = {"questions": len(load_questions())}
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "outputs"
        write_outputs(docs)
        report["outputs"] = {p.name: p.stat().st_size for p in sorted(docs.iterdir())}
        for name in names:
            if not available(name):
                report[name] = {"missing": "not installed: python -m bench.answer_peers.systems install"}
                continue
            report[name] = await run_system(name, docs, Path(tmp) / "work")
    breakdown(report, names)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", choices=NAMES, default=list(NAMES))
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the JSON (default: %(default)s)")
    args = parser.parse_args()
    load = load_average()
    report = anyio.run(run, args.systems)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**stamp(invocation("bench.answer_peers"), load), **report}, indent=1))
    print("| system | answered | tokens p50 | tokens p90 | tokens total | calls | tools list |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.systems:
        s = report[name].get("summary")
        if s:
            print(
                f"| {name} | {s['answered']} | {s['tokens_p50']:,} | {s['tokens_p90']:,} | {s['tokens_total']:,} | "
                f"{s['calls_total']} | {s['tools_list_tokens']:,} |"
            )


if __name__ == "__main__":
    main()
