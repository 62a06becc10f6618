"""The default answer while its document is still being embedded: what a model asks seconds after the reference.

A big output's lexical index is ready about a second after `store` returns; its vectors take minutes on a CPU,
the embedder working through each text's chunks in order. A question asked meanwhile is ranked by words for
every chunk and by meaning only for the chunks embedded so far. This asks each question of a set (eval.py's
`--set`) within its document, over documents an earlier eval run stored and embedded in `--data-dir`, with the
vectors of a share of the chunks withheld, and says how often `memory_query`'s default answer holds the answer
(answer_text.py's strict rule), beside the same with every vector there. `--order prefix` (the default) keeps
the vectors of each text's first chunks, as the embedder leaves them; `--order hash` a share spread over the text
(a hash of the chunk's id). The "still indexing" note a real query adds is not there (it costs about 40 tokens).

Usage: .venv/bin/python bench/retrieval/while_indexing.py --set tuning --data-dir DIR [--embedded 0.5 0.2]
           [--out FILE] [--compare EARLIER]   (EARLIER: another run's --out, each question's change counted)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import zlib
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import answer_text
import eval as retrieval

from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage.lexical import ChunkRecord
from offprompt.memory.task_memory import TaskMemory


def embedded(memory: TaskMemory, share: float, order: str) -> Callable[[str], bool]:
    """Whether a chunk (by its id, `namespace:item:chunk`) has its vector, for `share` of each text's chunks."""
    if order == "hash":
        return lambda chunk_id: zlib.crc32(chunk_id.encode()) % 1000 < share * 1000
    counts = memory.text._lexical.chunk_counts()  # type: ignore[attr-defined]

    def first_chunks(chunk_id: str) -> bool:
        namespace, item, chunk = chunk_id.rsplit(":", 2)
        return int(chunk) < share * counts.get((namespace, int(item)), 0)

    return first_chunks


def withhold(memory: TaskMemory, has_vector: Callable[[str], bool], share: float) -> None:
    """Make the memory's dense index answer as if only the chunks `has_vector` names were embedded."""
    dense = memory.text._search._dense  # type: ignore[attr-defined]
    search, similarities = dense.search, dense.similarities

    def nearest(vector: Sequence[float], namespaces: Collection[str] | None, limit: int) -> list[Any]:
        wanted = math.ceil(2 * limit / share)  # enough of all the vectors for `limit` of the kept ones
        return [n for n in search(vector, namespaces, wanted) if has_vector(n[0].id)][:limit]

    def similar(vector: Sequence[float], records: Sequence[ChunkRecord]) -> dict[str, float]:
        return {k: v for k, v in similarities(vector, records).items() if has_vector(k)}

    dense.search, dense.similarities = nearest, similar


def holds(memory: TaskMemory, questions: list[retrieval.Question]) -> dict[str, bool]:
    """Per question, whether the default answer within its document holds the answer."""
    stored = {r.arguments.get("path"): r.namespace for r in memory.recent(1000)}
    missing = sorted({q.doc for q in questions} - set(stored))
    if missing:
        sys.exit(f"{len(missing)} documents not in the --data-dir (e.g. {missing[0]}): run eval.py there first")
    return {q.id: answer_text.ask(memory, stored[q.doc], q.question, q.answer)["holds"] for q in questions}


def compare(now: dict[str, dict[str, bool]], earlier: dict[str, dict[str, bool]]) -> None:
    for share, rows in now.items():
        before = earlier.get(share, {})
        won = sorted(q for q, held in rows.items() if held and before.get(q) is False)
        lost = sorted(q for q, held in rows.items() if not held and before.get(q) is True)
        print(f"  {share}: {len(won)} more held ({', '.join(won) or '-'}), ", end="")
        print(f"{len(lost)} fewer ({', '.join(lost) or '-'})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=retrieval.SETS, default="tuning")
    parser.add_argument("--data-dir", type=Path, required=True, help="the --data-dir of an earlier eval run")
    parser.add_argument("--memory-name", default="retrieval-eval")
    parser.add_argument("--embedded", type=float, nargs="+", default=[0.5], help="shares of chunks with vectors")
    parser.add_argument("--order", choices=("prefix", "hash"), default="prefix", help="which chunks have them")
    parser.add_argument("--out", type=Path, help="where to write the JSON (default: print only)")
    parser.add_argument("--compare", type=Path, help="an earlier run's --out: count each question's change")
    args = parser.parse_args()
    questions = retrieval.load_questions(args.set)
    report: dict[str, Any] = {"set": args.set, "order": args.order, "holds": {}, "questions": {}}
    for share in [1.0, *args.embedded]:
        memory = TaskMemory.open(MemorySettings(name=args.memory_name, data_dir=args.data_dir), resume_indexing=False)
        try:
            if share < 1.0:
                withhold(memory, embedded(memory, share, args.order), share)
            found = holds(memory, questions)
        finally:
            memory.close()
        key = f"{share:g}"
        report["questions"][key] = found
        report["holds"][key] = held = round(sum(found.values()) / len(found), 3)
        print(f"{args.set}: {share:.0%} of the chunks embedded ({args.order}): the default answer holds {held}")
    if args.compare:
        compare(report["questions"], json.loads(args.compare.read_text(encoding="utf-8"))["questions"])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
