"""Retrieval eval: does `memory_query` return the passage that answers the question?

Stores each document of data/docs/ in a fresh memory the way a tool result
arrives (one MCP text block: the JSON documents become JSON artifacts), times
the indexing, then asks every question of data/qa.jsonl in each mode
(`dense`, `lexical`, `hybrid`): scoped to its document's namespace, as a model
holding the reference asks, and over the whole memory (all eight documents).

A returned chunk is a hit when it belongs to the question's document and its
byte span covers at least half of the bytes of the answer passage (the
`answer` field, an exact substring that occurs once in the document). The
JSON output also counts the stricter rule "covers the whole passage".

Reported: recall@1, recall@5 and MRR@10 (reciprocal rank of the first hit in
the top 10, 0 if none) per mode, per document kind, and indexing time. Also
how far fusion and reranking could go with these two rankers: how often the
answer is in the top 5 of either one (no fusion of the two lists does better
in practice), and in the top 50 of either (the candidates a reranker would
see).

Usage: .venv/bin/python bench/retrieval/eval.py [--out bench/results/retrieval.json] [--data-dir DIR]
       [--lexical-only]   (lexical and the fixed-window BM25 only, without embedding: about 20 s)
       [--data-dir DIR --reuse]   (ask again over documents an earlier run with that --data-dir stored and
                                   embedded: for tuning ranking without embedding 1.3 MB each time)
       [--postgres DSN]   (the shared memory: PostgreSQL full-text search instead of FTS5; with --lexical-only)
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as mt

from offprompt.artifacts import from_block
from offprompt.memory.chunking import chunk
from offprompt.memory.storage.base import Hit
from offprompt.memory.task_memory import MemorySettings, TaskMemory

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE.parent / "results" / "retrieval.json"
MODES = ("dense", "lexical", "hybrid")
KINDS = ("code", "prose", "logs", "json")
TOP_K = 10
#: How deep a reranker of the two rankings' candidates would look.
POOL = 50


@dataclass(frozen=True)
class Question:
    id: str
    doc: str
    kind: str
    type: str
    question: str
    answer: str

    @property
    def split(self) -> str:
        """``dev``: the first 87 questions, which the rankers may be tuned on; ``held-out``: the ``*-nNN`` ones on
        four later documents, written before any tuning and never tuned on."""
        return "held-out" if "-n" in self.id else "dev"


SPLITS = ("dev", "held-out")


@dataclass(frozen=True)
class Doc:
    name: str
    data: bytes
    namespace: str
    offsets: Any  # the token index: hit offsets are tokens


def load_questions() -> list[Question]:
    lines = (DATA / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    return [Question(**json.loads(line)) for line in lines if line.strip()]


def hit_span(doc: Doc, hit: Hit) -> tuple[int, int]:
    """The byte span of a returned chunk: its text, found where its first token starts."""
    raw = hit.text.encode("utf-8")
    start = doc.data.find(raw, int(doc.offsets[hit.offset]))
    if start < 0:
        raise AssertionError(f"a hit's text is not in {doc.name} at token {hit.offset}")
    return start, start + len(raw)


def judge(doc: Doc, answer: tuple[int, int], hits: list[Hit]) -> tuple[int | None, int | None]:
    """1-based rank of the first hit covering most of the answer, and of the first covering all of it."""
    return judge_spans(answer, [hit_span(doc, h) if h.namespace == doc.namespace else (0, 0) for h in hits])


def judge_spans(answer: tuple[int, int], spans: list[tuple[int, int]]) -> tuple[int | None, int | None]:
    most = whole = None
    a, b = answer
    for rank, (s, e) in enumerate(spans, start=1):
        covered = max(0, min(b, e) - max(a, s))
        if most is None and 2 * covered >= b - a:
            most = rank
        if whole is None and covered == b - a:
            whole = rank
    return most, whole


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "recall@1": sum(1 for r in ranks if r == 1) / n,
        "recall@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--data-dir", type=Path, help="memory directory (default: a temporary one)")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the fixed 200-token chunks the issue started from"
    )
    parser.add_argument(
        "--lexical-only", action="store_true", help="rank by words only (no embedding): for tuning lexical fast"
    )
    parser.add_argument(
        "--baseline-from",
        type=Path,
        help="take the fixed-window baselines from an earlier run's JSON (same questions; they don't depend on "
        "offprompt's ranking) instead of embedding 1.3 MB again",
    )
    parser.add_argument("--memory-name", default="retrieval-eval", help="the memory's name in --data-dir")
    parser.add_argument(
        "--reuse", action="store_true", help="with --data-dir: use the documents an earlier run stored there"
    )
    parser.add_argument("--postgres", help="a PostgreSQL DSN: rank with the shared memory's lexical index")
    args = parser.parse_args()
    if args.reuse and not args.data_dir:
        parser.error("--reuse needs the --data-dir of an earlier run")
    if args.postgres and not args.lexical_only:
        parser.error("--postgres ranks by words only here (no Chroma server): add --lexical-only")
    if args.lexical_only:
        global MODES
        MODES = ("lexical",)

    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp:
        name = f"{args.memory_name}-{int(time.time())}" if args.postgres else args.memory_name
        settings = MemorySettings(name=name, data_dir=args.data_dir or Path(tmp), postgres=args.postgres)
        memory = TaskMemory.open(settings)
        try:
            docs, indexing = index(memory, sorted({q.doc for q in questions}), reuse=args.reuse)
            answers = run(memory, docs, questions)
        finally:
            memory.close()
        if args.baseline_from:
            baselines = carried_baseline(args.baseline_from, questions)
        else:
            baselines = {} if args.no_baseline else baseline(docs, questions, Path(tmp))
    report = summarise(questions, answers, indexing)
    report["baseline"] = baselines
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


def index(memory: TaskMemory, names: list[str], reuse: bool = False) -> tuple[dict[str, Doc], dict[str, Any]]:
    docs: dict[str, Doc] = {}
    store_ms: dict[str, float] = {}
    stored = {r.arguments.get("path"): r.namespace for r in memory.recent(1000)} if reuse else {}
    started = time.perf_counter()
    for name in names:
        data = (DATA / name).read_bytes()
        t0 = time.perf_counter()
        namespace = stored.get(name)
        if namespace is None:
            artifact = from_block(mt.TextContent(text=data.decode("utf-8")))
            namespace = memory.store([artifact], tool="bench.read_file", arguments={"path": name}).namespace
        store_ms[name] = (time.perf_counter() - t0) * 1000
        docs[name] = Doc(name, data, namespace, memory.text.token_index(namespace, 0).offsets)  # type: ignore[attr-defined]
    text = memory.text
    assert text.wait_chunked(None, 600)  # type: ignore[attr-defined]
    if memory.text.__class__.__name__ == "SharedTextStorage":
        assert text.wait_indexed(600)  # type: ignore[attr-defined]  # chunked by the queue, in no process's count
    lexical_ready = time.perf_counter() - started
    if "dense" in MODES:
        assert text.wait_indexed(timeout=3600)  # type: ignore[attr-defined]
    embedded = time.perf_counter() - started
    per_doc = {}
    for name, doc in docs.items():
        kind = "json" if name.endswith(".json") else "text"
        chunks = chunk(doc.data, kind)
        per_doc[name] = {"bytes": len(doc.data), "chunks": len(chunks), "store_ms": round(store_ms[name], 1)}
    total_chunks = sum(d["chunks"] for d in per_doc.values())
    return docs, {
        "documents": len(docs),
        "bytes": sum(len(d.data) for d in docs.values()),
        "chunks": total_chunks,
        "store_ms_total": round(sum(store_ms.values()), 1),
        "lexical_ready_s": round(lexical_ready, 2),
        "fully_indexed_s": round(embedded, 2),
        "chunks_per_s": round(total_chunks / embedded, 1),
        "per_document": per_doc,
        # Stored and embedded by an earlier run: the times above are then not indexing times.
        "reused": bool(stored),
    }


def run(memory: TaskMemory, docs: dict[str, Doc], questions: list[Question]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []
    for q in questions:
        doc = docs[q.doc]
        a = doc.data.find(q.answer.encode("utf-8"))
        span = (a, a + len(q.answer.encode("utf-8")))
        row: dict[str, Any] = {"id": q.id, "kind": q.kind, "type": q.type, "split": q.split}
        for scope in ("document", "memory"):
            for mode in MODES:
                t0 = time.perf_counter()
                hits, _ = memory.query(q.question, doc.namespace if scope == "document" else None, TOP_K, mode=mode)
                ms = (time.perf_counter() - t0) * 1000
                most, whole = judge(doc, span, hits)
                row[f"{scope}/{mode}"] = {"rank": most, "rank_whole": whole, "ms": round(ms, 2)}
        deep = []
        for mode in ("dense", "lexical"):
            if mode not in MODES:
                continue
            hits, _ = memory.query(q.question, doc.namespace, POOL, mode=mode)
            deep.extend(r for r in judge(doc, span, hits)[:1] if r is not None)
        row["document/either"] = min(deep, default=None)
        answers.append(row)
    return answers


def baseline(docs: dict[str, Doc], questions: list[Question], tmp: Path) -> dict[str, Any]:
    """Where the issue started: fixed 200-token windows, ranked by the same MiniLM's cosine, or by BM25."""
    from offprompt.embedding import MiniLMEmbedding
    from offprompt.memory.storage.lexical import ChunkRecord, SqliteLexicalIndex

    model = MiniLMEmbedding() if "dense" in MODES else None
    lexical = SqliteLexicalIndex(tmp / "baseline-lexical.sqlite3")
    ranks: dict[str, list[int | None]] = {"dense": [], "lexical": []} if model else {"lexical": []}
    started = time.perf_counter()
    windows: dict[str, tuple[list[tuple[int, int]], Any]] = {}
    for name, doc in docs.items():
        cuts = [int(o) for o in doc.offsets[::200]] + [len(doc.data)]
        spans = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
        texts = [doc.data[a:b].decode("utf-8") for a, b in spans]
        records = [ChunkRecord(name, 0, n, a, b, 0, "") for n, (a, b) in enumerate(spans)]
        lexical.add(name, 0, records, texts, [""] * len(texts))
        windows[name] = (spans, model.embed(texts) if model else None)
    seconds = time.perf_counter() - started
    for q in questions:
        spans, vectors = windows[q.doc]
        data = docs[q.doc].data
        a = data.find(q.answer.encode("utf-8"))
        answer = (a, a + len(q.answer.encode("utf-8")))
        if model:
            nearest = (vectors @ model.embed([q.question])[0]).argsort()[::-1][:TOP_K]
            ranks["dense"].append(judge_spans(answer, [spans[i] for i in nearest])[0])
        found = lexical.search(q.question, [q.doc], TOP_K)
        ranks["lexical"].append(judge_spans(answer, [(h.record.start, h.record.end) for h in found])[0])
    lexical.close()
    chunks = sum(len(spans) for spans, _ in windows.values())
    by: dict[str, Any] = {}
    for mode, r in ranks.items():
        groups: dict[str, list[int | None]] = defaultdict(list)
        for n, q in enumerate(questions):
            for key in (q.kind, q.split, f"{q.split}/{q.kind}"):
                groups[key].append(r[n])
        by[f"fixed-200/{mode}"] = {k: metrics(v) for k, v in sorted(groups.items())}
    return {
        "chunks": chunks,
        "indexing_s": round(seconds, 2),
        **{f"fixed-200/{mode}": metrics(r) for mode, r in ranks.items()},
        "by": by,
        "ranks": {q.id: {mode: r[n] for mode, r in ranks.items()} for n, q in enumerate(questions)},
    }


def carried_baseline(path: Path, questions: list[Question]) -> dict[str, Any]:
    earlier = json.loads(path.read_text(encoding="utf-8"))
    base: dict[str, Any] = earlier.get("baseline") or {}
    if set(base.get("ranks", {})) != {q.id for q in questions}:
        raise SystemExit(f"{path} holds no baseline for these questions: run without --baseline-from")
    return {**base, "carried_from": str(path)}


def summarise(questions: list[Question], answers: list[dict[str, Any]], indexing: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for scope in ("document", "memory"):
        for mode in MODES:
            key = f"{scope}/{mode}"
            ranks = [a[key]["rank"] for a in answers]
            entry: dict[str, Any] = metrics(ranks)
            entry["strict"] = metrics([a[key]["rank_whole"] for a in answers])
            entry["query_ms_p50"] = round(statistics.median(a[key]["ms"] for a in answers), 2)
            by: dict[str, list[int | None]] = defaultdict(list)
            for a in answers:
                for group in (a["kind"], a["type"], a["split"], f"{a['split']}/{a['kind']}"):
                    by[group].append(a[key]["rank"])
            entry["by"] = {k: metrics(v) for k, v in sorted(by.items())}
            entry["missed@5"] = [a["id"] for a in answers if a[key]["rank"] is None or a[key]["rank"] > 5]
            results[key] = entry
    either = [a["document/either"] for a in answers]
    results["document/either"] = {
        "top5": sum(1 for r in either if r is not None and r <= 5) / len(answers),
        f"top{POOL}": sum(1 for r in either if r is not None) / len(answers),
    }
    return {
        "questions": len(questions),
        "hit_rule": "a returned chunk of the right document covers at least half of the answer passage's bytes",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "indexing": indexing,
        "results": results,
        "answers": answers,
    }


def print_report(report: dict[str, Any]) -> None:
    ix = report["indexing"]
    print(
        f"{report['questions']} questions over {ix['documents']} documents ({ix['bytes']:,} bytes, "
        f"{ix['chunks']:,} chunks)"
    )
    if ix.get("reused"):
        print("indexing: not timed (--reuse: the documents an earlier run stored and embedded)")
    else:
        print(
            f"indexing: store {ix['store_ms_total']:.0f} ms in all; searchable by words after "
            f"{ix['lexical_ready_s']:.1f} s, fully embedded after {ix['fully_indexed_s']:.1f} s "
            f"({ix['chunks_per_s']:.1f} chunks/s)"
        )
    for scope, title in (("document", "within the document's namespace"), ("memory", "over the whole memory")):
        print(f"\n{title}:")
        print(f"| mode | recall@1 | recall@5 | MRR@10 | {' | '.join(f'R@5 {k}' for k in KINDS)} | query p50 |")
        print("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in KINDS) + " | ---: |")
        for mode in MODES:
            r = report["results"][f"{scope}/{mode}"]
            kinds = " | ".join(f"{r['by'][k]['recall@5']:.2f}" for k in KINDS)
            print(
                f"| {mode} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {kinds} | "
                f"{r['query_ms_p50']:.0f} ms |"
            )
        for mode in MODES:
            missed = report["results"][f"{scope}/{mode}"]["missed@5"]
            print(f"  {mode} misses @5: {', '.join(missed) or 'none'}")
    either = report["results"]["document/either"]
    print(
        f"\nthe answer is in the top 5 of dense or lexical for {either['top5']:.3f} of the questions, "
        f"in the top {POOL} of one of them for {either[f'top{POOL}']:.3f}"
    )
    base = report.get("baseline")
    print_splits(report, base)
    if base:
        size = f"{base['chunks']:,} chunks, embedded in {base['indexing_s']:.1f} s"
        print(f"\nbaseline, fixed 200-token windows ({size}), within the document:")
        print("| ranking | recall@1 | recall@5 | MRR@10 |\n| --- | ---: | ---: | ---: |")
        for mode, label in (("dense", "MiniLM cosine"), ("lexical", "BM25")):
            if f"fixed-200/{mode}" not in base:
                continue
            r = base[f"fixed-200/{mode}"]
            print(f"| {label} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} |")


def ranks_of(base: dict[str, Any]) -> set[str]:
    return {key.split("/")[1] for key in base.get("by", {})}


def print_splits(report: dict[str, Any], base: dict[str, Any] | None) -> None:
    """Recall@1 / recall@5 per kind, dev and held-out apart, for the three modes and the fixed-window baselines."""
    for split in SPLITS:
        print(f"\n{split} questions, within the document: R@1 / R@5 per kind")
        print(f"| ranking | all | {' | '.join(KINDS)} |\n| --- | ---: | " + " | ".join("---:" for _ in KINDS) + " |")
        rows: list[tuple[str, dict[str, Any]]] = [(m, report["results"][f"document/{m}"]["by"]) for m in MODES]
        if base:
            ranked = ranks_of(base)
            rows += [(f"fixed-200 {m}", base["by"][f"fixed-200/{m}"]) for m in ("dense", "lexical") if m in ranked]
        for label, by in rows:
            cells = [by.get(split)] + [by.get(f"{split}/{k}") for k in KINDS]
            text = " | ".join(f"{c['recall@1']:.2f} / {c['recall@5']:.2f}" if c else "-" for c in cells)
            print(f"| {label} | {text} |")


if __name__ == "__main__":
    sys.exit(main())
