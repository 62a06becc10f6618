"""Every question's candidate chunks with the features hybrid ranking scores them on, for fitting the fusion.

Asks each question of a set (eval.py's `--set`) within its document in hybrid mode, over documents an earlier
eval run stored and embedded in `--data-dir`, and writes one JSON line per question: its id, document, kind
and the named-identifier count, features (offprompt.memory.storage.ranking.FEATURES) and strict and lenient
hit of every candidate the query path fused. fit_fusion.py ranks these again under other weights without
embedding anything.

Checks, as it goes, that ranking the candidates by (named, score) again gives the rank the query returned (the
fused order, before the words' first passage is moved among the five).

Usage: .venv/bin/python bench/retrieval/features.py --set tuning --data-dir DIR --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import eval as retrieval

from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage import ranking, text_query
from offprompt.memory.storage.base import Candidate
from offprompt.memory.task_memory import TaskMemory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=retrieval.SETS, default="tuning")
    parser.add_argument("--data-dir", type=Path, required=True, help="the --data-dir of an earlier eval run")
    parser.add_argument("--memory-name", default="retrieval-eval")
    parser.add_argument("--out", type=Path, required=True, help="the JSON lines to write")
    parser.add_argument(
        "--spent",
        action="store_true",
        help="a frozen set already run once, its figures reported: it may be fitted on, and a newer set judges",
    )
    args = parser.parse_args()
    if args.set.startswith("frozen") and not args.spent:
        parser.error("a frozen set only reports until its one run: pass --spent for one already run")

    questions = retrieval.load_questions(args.set)
    captured: list[tuple[list[Candidate], list[list[float]]]] = []
    fuse = ranking.fuse

    def capturing(query: str, candidates: Sequence[Candidate], *rest: Any, **options: Any) -> None:
        captured.append((list(candidates), ranking.features(query, candidates)))
        fuse(query, candidates, *rest, **options)

    ranking.fuse = capturing  # type: ignore[assignment]
    # The fit ranks the fused candidates; the words' first passage is moved among the five afterwards, by a rule
    # of its own (fusion.kept_within), so the check below compares with the fused order before that move.
    text_query.kept_within = lambda hits, *kept, **options: list(hits)  # type: ignore[assignment]
    text_query.joined = lambda hits, passage, *rest, **options: list(hits)  # type: ignore[assignment]
    memory = TaskMemory.open(MemorySettings(name=args.memory_name, data_dir=args.data_dir))
    mismatched = 0
    try:
        docs, indexing = retrieval.index(memory, questions, reuse=True)
        if not indexing["reused"]:
            raise SystemExit(f"{args.data_dir} held none of the set's documents: run eval.py with it first")
        with args.out.open("w", encoding="utf-8") as out:
            for q in questions:
                doc = docs[q.doc]
                captured.clear()
                hits, _ = memory.query(q.question, doc.namespace, retrieval.TOP_K, mode="hybrid")
                candidates, rows = captured[-1]
                row, agrees = describe(q, doc, hits, candidates, rows)
                mismatched += not agrees
                out.write(json.dumps(row) + "\n")
    finally:
        memory.close()
    print(f"wrote {len(questions)} questions to {args.out}; re-ranking disagreed with the query on {mismatched}")
    return 1 if mismatched else 0


def describe(
    q: retrieval.Question,
    doc: retrieval.Doc,
    hits: Sequence[Any],
    candidates: Sequence[Candidate],
    rows: Sequence[Sequence[float]],
) -> tuple[dict[str, Any], bool]:
    span = retrieval.answer_span(doc.data, q.answer)
    held = retrieval.stripped(doc.data, span)
    found = []
    for c, features in zip(candidates, rows, strict=True):
        lenient, strict = retrieval.judge_spans(span, [(c.record.start, c.record.end)], held)
        found.append(
            {
                "chunk": c.record.chunk,
                "named": c.named,
                "score": c.score,
                "bytes": c.record.end - c.record.start,
                "features": [round(f, 6) for f in features],
                "strict": strict == 1,
                "lenient": lenient == 1,
            }
        )
    order = sorted(found, key=lambda c: (c["named"], c["score"]), reverse=True)[: retrieval.TOP_K]
    again = next((n for n, c in enumerate(order, start=1) if c["strict"]), None)
    returned = retrieval.judge(doc, span, list(hits))[1]
    row = {
        "id": q.id,
        "doc": q.doc,
        "kind": q.kind,
        "type": q.type,
        "question": q.question,
        "features": list(ranking.FEATURES),
        "rank_whole": returned,
        "candidates": found,
    }
    return row, again == returned


if __name__ == "__main__":
    sys.exit(main())
