"""Tokens to answer: what a model pays, in calls and tokens, to read the passage that answers a question.

    .venv/bin/python -m bench.retrieval.answer_cost          # writes bench/results/answer_cost.json

The questions are the retrieval eval's frozen set (eval.py's `load_questions("frozen")`, 111 questions over 10
documents written from outside): this only reports, nothing is tuned on it (`--set tuning` asks the tuning
questions instead). Each question's document is the result of a proxied tool (`docs__read`) served in this
process behind a real offprompt (real memory, real indexes, the real reference with its 400-token outline). A
scripted reader sees only what a model would see and stops as soon as it has read the answer passage (at least
half of its non-blank lines' characters, verbatim). Every reader starts with the tool call and its reference,
then at most one search call and at most three `memory_load`s of 600 tokens:

- query first: `memory_query` (the question, that namespace, `top_k` 5 and `more` 10), which it reads whole
  (passages and candidate lines), then `memory_load` at the candidates' lines best first, then at the passages'
  lines; the query runs as soon as the result is searchable by words (a fresh result is not embedded yet when a
  model asks about it, so this measures the lexical side of `hybrid`);
- grep first: `memory_grep` for the question's longest word of at least 4 letters that is not a common English
  word (`COMMON`; the first of equally long ones), case-insensitive, then `memory_load` at the matching lines
  in order;
- outline then load: the entries of the reference's outline (`memory_outline`'s first page instead when no
  shown entry shares a word with the question and the reference says there are more), ranked by how many of
  the question's words their title holds (first in the document among equals), then `memory_load` at the
  lines of the best three that share a word.

A load is skipped when its line was read already. `--readers intent` adds the reader that calls the tool with
the question as `intent` (its reference shows the passages for it too) and then reads as query first does;
"whole output" is one call that returns the document itself. Tokens are counted with o200k_base over every
text block the model gets (tool call arguments are not counted).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from bench.report import invocation, load_average, stamp
from mcp import Client
from mcp.server.mcpserver import MCPServer

from offprompt.config import parse_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "retrieval"))  # eval.py imports its sibling generated.py by name
from bench.retrieval.eval import SETS, load_questions  # noqa: E402
from tests.proxy.inprocess import in_process  # noqa: E402 - the in-process connect the tests use

OUT = REPO / "bench" / "results" / "answer_cost.json"
READERS = ("query", "grep", "outline")
OPTIONAL = ("intent",)
LABELS = {"query": "query first", "grep": "grep first", "outline": "outline then load", "intent": "intent, then query"}
KINDS = ("code", "prose", "markdown", "logs", "json")
MAX_LOADS = 3
LOAD_TOKENS = 600
BUDGET = 2000
#: Common English words a grep for the question's rarest word skips (its longest other word stands in for the
#: rarest: no word-frequency list is at hand). Fixed before any run, from no document.
COMMON = frozenset(
    """about above after again against along also another anything around because been before behind being
    below between both called cannot could default does doing done down during each either else enough every
    example exactly find first from get gets give given gives going have having here into just know like
    look made make makes many might more most much must need needs never next once only other otherwise over
    same should show since some something still such take tell than that their them then there these they
    thing things this those through type under until used uses using very want what when where whether which
    while will with within without would your""".split()  # noqa: SIM905 - a word list reads best as words
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: Question words an outline title never needs to share to be the one.
STOP = COMMON | frozenset("how the and for are but can did doesn don got has isn may not out was why you".split())  # noqa: SIM905


def answered(answer: str, seen: str) -> bool:
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    found = sum(len(line) for line in lines if line in seen)
    return found * 2 >= sum(len(line) for line in lines)


def tokens_of(result: mt.CallToolResult) -> tuple[int, str]:
    text = "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
    return count_tokens(text), text


def words(text: str) -> set[str]:
    """Lowercase words of 3+ letters and the parts of identifiers (`get_list`, `getList` -> get, list), without
    common words."""
    out: set[str] = set()
    for word in WORD.findall(text):
        parts = [word, *re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word.replace("_", " "))]
        out.update(p.lower() for p in parts if len(p) >= 3)
    return out - STOP


def grep_word(question: str) -> str | None:
    """The question's longest word of 4+ letters that is not common (the first of equally long ones)."""
    found = [w for w in WORD.findall(question) if len(w) >= 4 and w.lower() not in COMMON]
    return max(found, key=len) if found else None


@dataclass
class Reading:
    """One reader's calls on one question: what it has seen and paid."""

    client: Client
    answer: str
    calls: int
    tokens: int
    seen: str
    loaded: list[tuple[int, int, int]] = field(default_factory=list)  # (item, first line, last line)
    loads: int = 0

    @property
    def done(self) -> bool:
        return answered(self.answer, self.seen)

    async def call(self, tool: str, args: dict[str, Any]) -> mt.CallToolResult:
        result = await self.client.call_tool(tool, args)
        cost, text = tokens_of(result)
        self.calls, self.tokens, self.seen = self.calls + 1, self.tokens + cost, self.seen + "\n" + text
        return result

    async def load(self, namespace: str, item: int, line: int) -> None:
        """`memory_load` at a line, unless that line was read already or the loads are spent."""
        if self.done or self.loads >= MAX_LOADS or any(i == item and a <= line <= b for i, a, b in self.loaded):
            return
        self.loads += 1
        args = {"artifact_namespace": namespace, "item": item, "line": max(line, 1), "max_tokens": LOAD_TOKENS}
        result = await self.call("memory_load", args)
        if result.meta and not result.is_error:
            meta = result.meta["offprompt"]
            self.loaded.append((item, meta["line"], meta["end_line"]))


@dataclass(frozen=True)
class Reference:
    calls: int
    tokens: int
    text: str
    namespace: str | None  # None: the result came inline


async def query_first(r: Reading, question: str, ref: Reference) -> None:
    assert ref.namespace is not None
    args = {"query": question, "artifact_namespace": ref.namespace, "top_k": 5, "more": 10}
    result = await r.call("memory_query", args)
    if r.done or not result.meta:
        return
    meta = result.meta["offprompt"]
    for hit in [*meta.get("more", []), *meta["results"]]:
        if hit.get("line"):
            await r.load(ref.namespace, hit["item"], hit["line"])


async def grep_first(r: Reading, question: str, ref: Reference) -> None:
    assert ref.namespace is not None
    word = grep_word(question)
    if word is None:
        return
    result = await r.call("memory_grep", {"pattern": "(?i)" + re.escape(word), "artifact_namespace": ref.namespace})
    if r.done or not result.meta:
        return
    for match in result.meta["offprompt"]["matches"]:
        await r.load(ref.namespace, match["item"], match["line"])


OUTLINE_ROW = re.compile(r"^\s*L(\d+)(?:-\d+)? (.+)$", re.M)
TOP_LEVEL = re.compile(r"^(.+) L(\d+)$")


def shown_outline(text: str) -> tuple[int, list[tuple[int, str]]]:
    """The item and the (line, title) entries of the outline a reference shows, as its text gives them."""
    if "Outline of item " not in text:
        return 0, []
    body = text.split("Outline of item ", 1)[1]
    item = int(body.split(" ", 1)[0].rstrip(":"))
    entries = [(int(m[1]), m[2]) for m in OUTLINE_ROW.finditer(body)]
    for row in body.splitlines():
        if row.startswith("Also at top level:"):
            named = (TOP_LEVEL.match(part.strip()) for part in row.split(":", 1)[1].split(", "))
            entries += [(int(m[2]), m[1]) for m in named if m]
    return item, entries


def best_entries(question: str, entries: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(shared words, line) of the entries sharing a word with the question, most first, document order among
    equals."""
    asked = words(question)
    scored = [(len(asked & words(title)), line) for line, title in entries]
    return sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))


async def outline_then_load(r: Reading, question: str, ref: Reference) -> None:
    assert ref.namespace is not None
    item, entries = shown_outline(ref.text)
    picked = best_entries(question, entries)
    if not picked and "memory_outline(" in ref.text:
        result = await r.call("memory_outline", {"artifact_namespace": ref.namespace, "item": item})
        if r.done or not result.meta:
            return
        full = [(e["line"], e["title"]) for e in result.meta["offprompt"]["outline"]]
        picked = best_entries(question, full)
    for _, line in picked[:MAX_LOADS]:
        await r.load(ref.namespace, item, line)


Reader = Callable[[Reading, str, Reference], Awaitable[None]]
STEPS: dict[str, Reader] = {
    "query": query_first,
    "grep": grep_first,
    "outline": outline_then_load,
    "intent": query_first,
}


@asynccontextmanager
async def offprompt(memory: TaskMemory, docs: dict[str, str]) -> AsyncIterator[Client]:
    server = MCPServer("docs")

    @server.tool()
    def read(path: str) -> str:
        """Read a file."""
        return docs[path]

    block = {"outline_tokens": 400, "intent": True, "threshold_tokens": 4000}
    config = parse_config({"offprompt": block, "mcpServers": {"docs": {"command": "in-process"}}})
    proxy = Proxy(config.servers, connect=in_process({"docs": server}), intent=True)
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        yield client


async def reference(client: Client, arguments: dict[str, Any]) -> Reference:
    cost, text = tokens_of(await client.call_tool("docs__read", arguments))
    if 'artifact_namespace "' not in text:  # small enough to pass inline: the model has read it all
        return Reference(1, cost, text, None)
    return Reference(1, cost, text, text.split('artifact_namespace "', 1)[1].split('"', 1)[0])


async def read_one(
    client: Client, q: Any, readers: list[str], wait: Callable[[str], Awaitable[None]]
) -> dict[str, dict[str, Any]]:
    """Every reader's row for one question: one store the readers share (they read, never change it), the
    intent reader on a store of its own."""
    rows: dict[str, dict[str, Any]] = {}

    async def run(name: str, ref: Reference) -> None:
        r = Reading(client, q.answer, ref.calls, ref.tokens, ref.text)
        if ref.namespace is not None and not r.done:
            await STEPS[name](r, q.question, ref)
        rows[name] = {"id": q.id, "kind": q.kind, "answered": r.done, "calls": r.calls, "tokens": r.tokens}

    shared = [name for name in readers if name != "intent"]
    if shared:
        ref = await reference(client, {"path": q.doc})
        if ref.namespace is not None:
            await wait(ref.namespace)
        for name in shared:
            await run(name, ref)
        if ref.namespace is not None:  # not the model's: keeps the run small
            await client.call_tool("memory_delete", {"artifact_namespace": ref.namespace})
    if "intent" in readers:
        ref = await reference(client, {"path": q.doc, "intent": q.question})
        if ref.namespace is not None:
            await wait(ref.namespace)
        await run("intent", ref)
        if ref.namespace is not None:
            await client.call_tool("memory_delete", {"artifact_namespace": ref.namespace})
    return rows


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


async def run(question_set: str, readers: list[str], limit: int | None) -> dict[str, Any]:
    questions = load_questions(question_set)
    questions = questions[:limit] if limit else questions
    docs = {q.doc: q.path.read_text(encoding="utf-8") for q in questions}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in readers}
    with tempfile.TemporaryDirectory() as tmp:
        memory = TaskMemory.open(MemorySettings(name="answer-cost", data_dir=Path(tmp), chroma="ephemeral"))
        try:

            async def wait(namespace: str) -> None:
                # A model asks a few seconds later: searchable by words by then, by meaning not yet.
                text: Any = memory.text
                await anyio.to_thread.run_sync(lambda: text.wait_chunked([namespace], 120))

            async with offprompt(memory, docs) as client:
                for q in questions:
                    for name, row in (await read_one(client, q, readers, wait)).items():
                        rows[name].append(row)
        finally:
            memory.close()
    report: dict[str, Any] = {"questions": f"{question_set} ({len(questions)})"}
    kinds = [k for k in KINDS if any(q.kind == k for q in questions)]
    for name in readers:
        per_kind = {k: summary([r for r in rows[name] if r["kind"] == k]) for k in kinds}
        report[name] = {"summary": summary(rows[name]), "kinds": per_kind, "rows": rows[name]}
    report["by_kind"] = {
        k: {name: report[name]["kinds"][k]["answered"] for name in readers}
        | {f"{name}_within": report[name]["kinds"][k]["within_2_calls_and_2000_tokens"] for name in readers}
        for k in kinds
    }
    whole = [count_tokens(docs[q.doc]) for q in questions]
    report["whole_output"] = {
        "tokens_p50": statistics.median(whole),
        "tokens_p90": sorted(whole)[int(0.9 * (len(whole) - 1))],
    }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, default="frozen", help="which questions (default: frozen)")
    parser.add_argument(
        "--readers",
        nargs="+",
        choices=READERS + OPTIONAL,
        default=list(READERS),
        help="which readers (default: query grep outline)",
    )
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the JSON (default: %(default)s)")
    args = parser.parse_args()
    load = load_average()
    report = anyio.run(run, args.set, args.readers, args.limit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**stamp(invocation("bench.retrieval.answer_cost"), load), **report}, indent=1))
    print(f"questions: {report['questions']}")
    print("| reader | answered | tokens p50 | tokens p90 | within 2 calls and 2,000 tokens | calls p50 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.readers:
        s = report[name]["summary"]
        print(
            f"| {LABELS[name]} | {s['answered']:.3f} | {s['tokens_p50']:,} | {s['tokens_p90']:,} | "
            f"{s['within_2_calls_and_2000_tokens']:.3f} | {s['calls_p50']} |"
        )
    w = report["whole_output"]
    print(f"| whole output | 1.000 | {w['tokens_p50']:,} | {w['tokens_p90']:,} | | 1 |")
    print("\nanswered (within 2 calls and 2,000 tokens) per kind:")
    for kind, cells in report["by_kind"].items():
        print(f"  {kind}: " + ", ".join(f"{n} {cells[n]:.2f} ({cells[n + '_within']:.2f})" for n in args.readers))


if __name__ == "__main__":
    main()
