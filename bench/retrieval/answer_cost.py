"""Tokens to answer: what a model pays, in calls and tokens, to read the passage that answers a question.

    .venv/bin/python -m bench.retrieval.answer_cost          # writes bench/results/answer_cost.json

Each eval document is the result of a proxied tool (`docs__read`) served in this process behind a real
offprompt (real memory, real indexes, the real reference). A scripted reader sees only what a model would
see and stops as soon as it has read the answer passage (at least half of its non-blank lines, verbatim):

1. the tool call itself, with the question as `intent` in the "map" variant; its reference shows the
   outline and the passages for the intent;
2. `memory_query` (the question, that namespace, top 3), once the result is searchable by words (a fresh
   result is not embedded yet when a model asks about it, so this measures the lexical side of `hybrid`);
3. `memory_load` at each hit's line (600 tokens), best hit first, up to 3 loads.

The "no map" variant stores with `outline_tokens: 0` and calls the tool without `intent`. "Whole output"
is one call that returns the document itself. Tokens are counted with o200k_base over every text block the
model gets (tool call arguments are not counted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from bench.report import invocation, load_average, stamp
from mcp import Client
from mcp.server.mcpserver import MCPServer

from offprompt.config import parse_config
from offprompt.memory.task_memory import MemorySettings, TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.proxy.inprocess import in_process  # noqa: E402 - the in-process connect the tests use

DATA = REPO / "bench" / "retrieval" / "data"
OUT = REPO / "bench" / "results" / "answer_cost.json"
MAX_LOADS = 3
LOAD_TOKENS = 600
BUDGET = 2000


def answered(answer: str, seen: str) -> bool:
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    found = sum(len(line) for line in lines if line in seen)
    return found * 2 >= sum(len(line) for line in lines)


def tokens_of(result: mt.CallToolResult) -> tuple[int, str]:
    text = "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
    return count_tokens(text), text


@asynccontextmanager
async def offprompt(memory: TaskMemory, docs: dict[str, str], with_map: bool) -> AsyncIterator[Client]:
    server = MCPServer("docs")

    @server.tool()
    def read(path: str) -> str:
        """Read a file."""
        return docs[path]

    block = {"outline_tokens": 400 if with_map else 0, "intent": with_map, "threshold_tokens": 4000}
    config = parse_config({"offprompt": block, "mcpServers": {"docs": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"docs": server}), intent=with_map)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        yield client


async def read_one(client: Client, question: dict[str, Any], with_map: bool, wait: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {"path": question["doc"]}
    if with_map:
        arguments["intent"] = question["question"]
    calls, spent, seen = 1, *tokens_of(await client.call_tool("docs__read", arguments))
    if 'artifact_namespace "' not in seen:  # small enough to pass inline: the model has read it all
        return {"id": question["id"], "kind": question["kind"], "answered": True, "calls": 1, "tokens": spent}
    namespace = seen.split('artifact_namespace "', 1)[1].split('"', 1)[0]
    await wait(namespace)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("memory_query", {"query": question["question"], "artifact_namespace": namespace, "top_k": 3})
    ]
    done = answered(question["answer"], seen)
    while not done and steps:
        tool, args = steps.pop(0)
        result = await client.call_tool(tool, args)
        cost, text = tokens_of(result)
        calls, spent, seen = calls + 1, spent + cost, seen + "\n" + text
        done = answered(question["answer"], seen)
        if tool == "memory_query" and result.meta:
            for hit in result.meta["offprompt"]["results"][:MAX_LOADS]:
                where = {"line": hit["line"]} if hit.get("line") else {"offset": hit["offset"]}
                steps.append(
                    (
                        "memory_load",
                        {"artifact_namespace": namespace, "item": hit["item"], "max_tokens": LOAD_TOKENS} | where,
                    )
                )
    await client.call_tool("memory_delete", {"artifact_namespace": namespace})  # not the model's: keeps the run small
    return {"id": question["id"], "kind": question["kind"], "answered": done, "calls": calls, "tokens": spent}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tokens = sorted(r["tokens"] for r in rows)
    found = [r for r in rows if r["answered"]]
    return {
        "questions": len(rows),
        "answered": round(len(found) / len(rows), 3),
        "tokens_p50": statistics.median(tokens),
        "tokens_p90": tokens[int(0.9 * (len(tokens) - 1))],
        "within_2_calls_and_2000_tokens": round(
            sum(1 for r in found if r["calls"] <= 2 and r["tokens"] <= BUDGET) / len(rows), 3
        ),
        "calls_p50": statistics.median(r["calls"] for r in rows),
    }


async def run(limit: int | None) -> dict[str, Any]:
    questions = [json.loads(line) for line in (DATA / "qa.jsonl").read_text().splitlines() if line.strip()]
    questions = questions[:limit] if limit else questions
    docs = {q["doc"]: (DATA / q["doc"]).read_text(encoding="utf-8") for q in questions}
    report: dict[str, Any] = {}
    for with_map in (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            memory = TaskMemory.open(MemorySettings(name="answer-cost", data_dir=Path(tmp), chroma="ephemeral"))
            try:

                async def wait(namespace: str, memory: TaskMemory = memory) -> None:
                    # A model asks a few seconds later: searchable by words by then, by meaning not yet.
                    text: Any = memory.text
                    await anyio.to_thread.run_sync(lambda: text.wait_chunked([namespace], 120))

                async with offprompt(memory, docs, with_map) as client:
                    rows = [await read_one(client, q, with_map, wait) for q in questions]
            finally:
                memory.close()
        report["map" if with_map else "no_map"] = {"summary": summary(rows), "rows": rows}
    whole = [count_tokens(docs[q["doc"]]) for q in questions]
    report["whole_output"] = {
        "tokens_p50": statistics.median(whole),
        "tokens_p90": sorted(whole)[int(0.9 * (len(whole) - 1))],
    }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="only the first N questions")
    args = parser.parse_args()
    load = load_average()
    report = anyio.run(run, args.limit)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({**stamp(invocation("bench.retrieval.answer_cost"), load), **report}, indent=1))
    print("| reader | answered | tokens p50 | tokens p90 | within 2 calls and 2,000 tokens | calls p50 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ("map", "no_map"):
        s = report[name]["summary"]
        print(
            f"| {name.replace('_', ' ')} | {s['answered']:.3f} | {s['tokens_p50']:,} | {s['tokens_p90']:,} | "
            f"{s['within_2_calls_and_2000_tokens']:.3f} | {s['calls_p50']} |"
        )
    w = report["whole_output"]
    print(f"| whole output | 1.000 | {w['tokens_p50']:,} | {w['tokens_p90']:,} | | 1 |")


if __name__ == "__main__":
    main()
