"""Aggregate questions (a count, a maximum, a "which has the most") answered by one `memory_select`, as a model
would: it reads the reference and the first record, then writes one jq expression.

    .venv/bin/python -m bench.retrieval.aggregates show --set frozen-4 --out DIR   # what a model sees, per question
    .venv/bin/python -m bench.retrieval.aggregates run --set frozen-4 --jq FILE    # scores FILE's expressions

The questions are a written set's `aggregate` rows (frozen-3, frozen-4), each with its exact answer and how its
writer computed it. `show` stores each document through a real offprompt (the proxied `docs__read`, as
answer_cost does), waits for its records, and writes per question what a model has read by then: the question,
the reference, and `memory_select`'s `.[0]` (the first record); never the answer. Whoever plays the model writes
`FILE`, one JSON object a line, `{"id": …, "jq": …}`, from those views alone. `run` stores the documents again,
runs each expression with `memory_select` on its document's item, and counts a question right when one value the
expression outputs (a scalar anywhere in an output line) equals the answer as the text writes it (numbers equal
as numbers; a number the writer wrote with its unit, `16201ms`, equals the number). Tokens: o200k_base over the
reference, the first record and the selection.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as mt
from bench.report import invocation, load_average, stamp
from mcp import Client

from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "retrieval"))
from bench.retrieval.answer_cost import offprompt, reference  # noqa: E402
from bench.retrieval.eval import WRITERS, read_jsonl  # noqa: E402

RECORDS_WAIT_SECONDS = 300  # a bound on waiting for the records, never a figure


@dataclass(frozen=True)
class Aggregate:
    id: str
    doc: str
    kind: str
    question: str
    answer: str
    how: str


def aggregates(question_set: str) -> list[Aggregate]:
    root = REPO / "bench" / "retrieval" / "data" / question_set
    rows = [row for letter in WRITERS[question_set] for row in read_jsonl(root / f"qa-{letter}.jsonl")]
    fields = ("id", "doc", "kind", "question", "answer", "how")
    return [Aggregate(**{k: row[k] for k in fields}) for row in rows if row["type"] == "aggregate"]


def text_of(result: mt.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


def scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for inner in value.values():
            yield from scalars(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from scalars(inner)
    else:
        yield value


#: A number the writer wrote with its unit (`16201ms`, `1.7 s`, `45%`): the expression computes the number.
_WITH_UNIT = re.compile(r"(-?[\d,]*\.?\d+) ?(?:[A-Za-z%]{1,3})")


def as_number(text: str) -> float | None:
    unit = _WITH_UNIT.fullmatch(text.strip())
    try:
        return float((unit[1] if unit else text).replace(",", ""))
    except ValueError:
        return None


def matches(answer: str, value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        wanted = as_number(answer)
        return wanted is not None and float(value) == wanted
    return str(value).strip() == answer.strip()


def right(answer: str, selection: str) -> bool:
    """Whether one value the selection outputs (one JSON value a line) is the answer."""
    for line in selection.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if any(matches(answer, v) for v in scalars(value)):
            return True
    return False


@asynccontextmanager
async def stored(question_set: str, tmp: Path) -> AsyncIterator[tuple[Client, dict[str, tuple[str, str]]]]:
    """A client of a real offprompt holding each aggregate document of the set, read through `docs__read`; per
    document its namespace and its reference's text."""
    root = REPO / "bench" / "retrieval" / "data" / question_set
    docs = {q.doc: (root / q.doc).read_text(encoding="utf-8") for q in aggregates(question_set)}
    memory = TaskMemory.open(MemorySettings(name="aggregates", data_dir=tmp, chroma="ephemeral"))
    try:
        async with offprompt(memory, docs) as client:
            held: dict[str, tuple[str, str]] = {}
            for doc in docs:
                ref = await reference(client, {"path": doc})
                if ref.namespace is None:
                    raise SystemExit(f"{doc} came back inline: it is too small for this bench")
                text: Any = memory.text  # memory_select itself waits for records still being made
                await anyio.to_thread.run_sync(text.wait_chunked, [ref.namespace], RECORDS_WAIT_SECONDS)
                held[doc] = (ref.namespace, ref.text)
            yield client, held
    finally:
        memory.close()


async def select(client: Client, namespace: str, expression: str) -> tuple[str, bool]:
    result = await client.call_tool("memory_select", {"artifact_namespace": namespace, "expression": expression})
    return text_of(result), bool(result.is_error)


async def show(question_set: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with stored(question_set, Path(tmp)) as (client, held):
            for q in aggregates(question_set):
                namespace, ref = held[q.doc]
                first, _ = await select(client, namespace, ".[0]")
                view = (
                    f"# {q.id}\n\nQuestion: {q.question}\n\nThe tool call's answer (the reference):\n\n{ref}\n\n"
                    f'memory_select(artifact_namespace="{namespace}", expression=".[0]"):\n\n{first}\n'
                )
                (out / f"{q.id}.md").write_text(view, encoding="utf-8")
    print(f"wrote {len(aggregates(question_set))} views to {out}")


async def run(question_set: str, expressions: dict[str, str]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with stored(question_set, Path(tmp)) as (client, held):
            for q in aggregates(question_set):
                namespace, ref = held[q.doc]
                first, _ = await select(client, namespace, ".[0]")
                expression = expressions.get(q.id)
                selection, failed = ("", True) if expression is None else await select(client, namespace, expression)
                tokens = sum(count_tokens(t) for t in (ref, first, selection))
                ok = not failed and right(q.answer, selection)
                rows.append({"id": q.id, "kind": q.kind, "right": ok, "tokens": tokens, "jq": expression})
    kinds = sorted({r["kind"] for r in rows})
    by_kind = {
        k: {"right": sum(r["right"] for r in rows if r["kind"] == k), "of": sum(r["kind"] == k for r in rows)}
        for k in kinds
    }
    return {
        "set": question_set,
        "right": sum(r["right"] for r in rows),
        "of": len(rows),
        "by_kind": by_kind,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    shown = sub.add_parser("show", help="write what a model sees for each aggregate question")
    shown.add_argument("--set", choices=sorted(WRITERS), default="frozen-4")
    shown.add_argument("--out", type=Path, required=True)
    scored = sub.add_parser("run", help="score a file of jq expressions")
    scored.add_argument("--set", choices=sorted(WRITERS), default="frozen-4")
    scored.add_argument("--jq", type=Path, required=True, help='JSON lines: {"id": ..., "jq": ...}')
    scored.add_argument("--out", type=Path, help="where to write the JSON report")
    args = parser.parse_args()
    if args.step == "show":
        args.out.mkdir(parents=True, exist_ok=True)
        anyio.run(show, args.set, args.out)
        return
    expressions = {row["id"]: row["jq"] for row in read_jsonl(args.jq)}
    load = load_average()
    report = anyio.run(run, args.set, expressions)
    if args.out is not None:
        args.out.write_text(json.dumps({**stamp(invocation("bench.retrieval.aggregates"), load), **report}, indent=1))
    print(f"{args.set}: {report['right']} of {report['of']} right by one memory_select")
    for kind, cell in report["by_kind"].items():
        print(f"  {kind}: {cell['right']} of {cell['of']}")
    for row in report["rows"]:
        print(f"  {row['id']}: {'right' if row['right'] else 'wrong'} ({row['tokens']:,} tokens) {row['jq']}")


if __name__ == "__main__":
    main()
