"""Dense recall against embedding cost at several wordpiece caps, on the eval's own chunks.

Embeds the model texts of every chunk of the eval's documents (as the indexer builds them) with the tokenizer
capped at each N wordpieces, ranks each document's chunks by cosine for its questions, and prints the
process CPU seconds and dense R@1 / R@5 per cap: the trade-off between "searchable by meaning sooner" and
recall. Needs a memory an eval run stored (its chunks are read from the lexical index):

    .venv/bin/python bench/retrieval/eval.py --data-dir D            # once: stores and indexes the documents
    .venv/bin/python bench/retrieval/dense_caps.py --data-dir D 256 128 64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eval import DATA, load_questions  # type: ignore[import-not-found]

from offprompt import embedding
from offprompt.memory import chunking
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage.text import searchable
from offprompt.memory.task_memory import TaskMemory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the --data-dir of an earlier eval run")
    parser.add_argument("--memory-name", default="retrieval-eval")
    parser.add_argument("caps", nargs="*", type=int, default=[256, 128, 64], help="wordpiece caps to try")
    args = parser.parse_args()
    questions = load_questions()
    memory = TaskMemory.open(MemorySettings(name=args.memory_name, data_dir=args.data_dir))
    try:
        stored = {r.arguments.get("path"): r.namespace for r in memory.recent(1000)}
        docs = {}
        for name in sorted({q.doc for q in questions}):
            data = (DATA / name).read_bytes()
            records = memory.text._lexical.chunks(stored[name], 0)  # type: ignore[attr-defined]
            texts = [chunking.for_embedding(searchable(r.context, data[r.start : r.end].decode())) for r in records]
            docs[name] = (data, records, texts)
    finally:
        memory.close()
    model = embedding.MiniLMEmbedding()
    model.embed(["warm up"])
    tokenizer = embedding._get_model_tokenizer()
    megabytes = sum(len(data) for data, _, _ in docs.values()) / 1e6
    print(
        "| cap | chunks | CPU s | CPU s per MB | dense R@1 | dense R@5 |\n| ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for cap in args.caps:
        tokenizer.enable_truncation(max_length=cap)
        started = time.process_time()
        vectors = {name: model.embed(texts) for name, (_, _, texts) in docs.items()}
        cpu = time.process_time() - started
        tokenizer.enable_truncation(max_length=embedding.MAX_WORDPIECES)
        asked = model.embed([q.question for q in questions])
        first = top5 = 0
        for q, vector in zip(questions, asked, strict=True):
            data, records, _ = docs[q.doc]
            a = data.find(q.answer.encode())
            b = a + len(q.answer.encode())
            order = (vectors[q.doc] @ vector).argsort()[::-1][:5]
            hits = [2 * max(0, min(b, records[i].end) - max(a, records[i].start)) >= b - a for i in order]
            first += hits[0]
            top5 += any(hits)
        chunks = sum(len(texts) for _, _, texts in docs.values())
        n = len(questions)
        print(f"| {cap} | {chunks:,} | {cpu:.1f} | {cpu / megabytes:.1f} | {first / n:.3f} | {top5 / n:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
