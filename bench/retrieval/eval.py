"""Retrieval eval: does `memory_query` return the passage that answers the question?

Four question sets (`--set`):

- `tuning`: the 132 questions of data/qa.jsonl over the 12 documents of data/docs/. The ranking was tuned on all
  of them: the 45 `*-nNN` ones, once held out, chose which changes were kept, so the old dev / held-out split is
  shown as a column but measures nothing held out.
- `frozen`: the 111 questions of data/frozen/qa-*.jsonl, written by two outside writers over 10 other documents
  (data/frozen/WRITER_PROMPT.md) and never tuned on: what predicts questions from outside. It has been run more
  often than its protocol asked (each ranking change was reported on it), so:
- `frozen-2`: the questions of data/frozen-2/qa-*.jsonl, by two new outside writers over new documents
  (data/frozen-2/WRITER_PROMPT.md), committed before any run: run once on the code of its commit, and once
  more only after a ranking change kept on tuning and generated.
- `generated`: about 400 questions made without a writer from real files on this machine that neither set uses
  (generated.py): the plain words of a standard-library name for its defining line, a JSON record's description
  without its identifiers for that description.

Stores each document of the set in a fresh memory the way a tool result arrives (one MCP text block: the JSON
documents become JSON artifacts), times the indexing, then asks every question in each mode (`dense`, `lexical`,
`hybrid`): scoped to its document's namespace, as a model holding the reference asks, and over the whole memory
(all the set's documents).

Two hit rules, both reported: a returned chunk of the question's document is a *strict* hit when its byte span
holds the whole answer passage (the `answer` field, an exact substring that occurs once in the document), a
*lenient* hit when it covers at least half of the passage's bytes.

Reported per rule: recall@1, recall@5 and MRR@10 (reciprocal rank of the first hit in the top 10, 0 if none),
overall and per document kind (code, prose, markdown, logs, json), for the three modes and for the fixed
200-token windows the issue started from (ranked by BM25 and by the same MiniLM's cosine), and BM25 over
800-character windows (and the questions it answers first that hybrid's five passages miss); hybrid's paired wins
and losses against the fixed-window BM25; how many answers no chunk can hold whole; and indexing time. Also how
far fusion and reranking could go with these two rankers: how often the answer is in the top 5 of either one,
and in the top 50 of either (the candidates a reranker would see).

The JSON (bench/results/retrieval-<set>.json unless --out) holds the figures the docs' tables read and the git
commit the run was made on; every question's rank per ranking and rule, for comparing a later run question by
question, goes to bench/listings/retrieval-<set>.json unless --answers (git-ignored: a listing is not a figure).

Usage: .venv/bin/python bench/retrieval/eval.py
       [--set tuning|frozen|frozen-2|…|frozen-18|generated]
       [--out FILE] [--data-dir DIR]
       [--lexical-only]   (lexical and the fixed-window BM25 only, without embedding: about 20 s)
       [--data-dir DIR --reuse]   (ask again over documents an earlier run with that --data-dir stored and
                                   embedded: for tuning ranking without embedding 1.3 MB each time)
       [--answers FILE]   (where every question's rank goes; default bench/listings/retrieval-<set>.json)
       [--baseline-from FILE]   (the fixed-window baselines of an earlier run's --answers file, same set: they
                                 don't depend on offprompt's ranking)
       [--postgres DSN]   (with --lexical-only: the shared memory's PostgreSQL full-text search too, ranked as
                           `postgres` beside FTS5's `lexical` on the same questions in the same run; writes
                           results/retrieval-SET-postgres.json)
       --markdown FILE...   (no run: the tables of earlier runs' --answers files, per set, as Markdown)
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import answer_text
import generated
import mcp_types as mt

import offprompt
from offprompt.artifacts import from_block
from offprompt.memory.outline.passages import terms as passage_terms
from offprompt.memory.settings import MemorySettings
from offprompt.memory.shown import best_row
from offprompt.memory.storage.base import Hit, SearchMode
from offprompt.memory.storage.indexing import text_chunks
from offprompt.memory.task_memory import TaskMemory

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DATA = HERE / "data"
FROZEN = DATA / "frozen"
#: The second frozen set: new documents and questions by two new outside writers, for a ranking run once.
FROZEN_2 = DATA / "frozen-2"
#: The third: tool outputs of kinds the others lack (tables, commit histories, test runs, pages as text), by two
#: more outside writers, committed before its one run. Its `aggregate` questions (a count, a maximum) have a value
#: for an answer, not a passage: `memory_select` answers them, not this ranking, so they are left out here.
#: Each later set's folder and its writers' question files (aggregate questions are answered by records, not ranked).
WRITERS = {
    "frozen-3": ("C", "D"),
    "frozen-4": ("E", "F"),
    "frozen-5": ("G", "H"),
    "frozen-6": ("I", "J"),
    "frozen-7": ("K", "L"),
    "frozen-8": ("M", "N"),
    "frozen-9": ("O", "P"),
    "frozen-10": ("Q", "R"),
    "frozen-11": ("S", "T"),
    "frozen-12": ("U", "V"),
    "frozen-13": ("W", "X"),
    "frozen-14": ("Y", "Z"),
    "frozen-15": ("g", "h"),
    "frozen-16": ("k", "m"),
    "frozen-17": ("c", "d"),
    "frozen-18": ("e", "i"),
}
RESULTS = HERE.parent / "results"
#: Every question's rank, per run: read by --baseline-from and --markdown, never committed (.gitignore).
LISTINGS = HERE.parent / "listings"
SETS = (
    "tuning",
    "frozen",
    "frozen-2",
    "frozen-3",
    "frozen-4",
    "frozen-5",
    "frozen-6",
    "frozen-7",
    "frozen-8",
    "frozen-9",
    "frozen-10",
    "frozen-11",
    "frozen-12",
    "frozen-13",
    "frozen-14",
    "frozen-15",
    "frozen-16",
    "frozen-17",
    "frozen-18",
    "generated",
)
MODES: tuple[SearchMode, ...] = ("dense", "lexical", "hybrid")
KINDS = ("code", "prose", "markdown", "logs", "json", "table", "commits", "tests", "page")
BASELINES = ("fixed-200/dense", "fixed-200/lexical", "window-800c/lexical")
LABELS = {
    "fixed-200/dense": "fixed-200 MiniLM",
    "fixed-200/lexical": "fixed-200 BM25",
    "window-800c/lexical": "800-char BM25",
}
#: The strict rule first: the judge of the frozen questions counts an answer found only when it is held whole.
RULES = ("strict", "lenient")
RANK_FIELD = {"strict": "rank_whole", "lenient": "rank"}
TOP_K = 10
#: What `memory_query` answers by default: its top 5 passages whole, then 10 candidates one line each.
PASSAGES, MORE = 5, 10
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
    #: ``dev`` / ``held-out`` for the tuning questions (both tuned on now), else the set's name.
    split: str = "dev"
    #: A generated question on a name that starts with ``_``.
    private: bool = False
    #: Where ``doc`` is relative to (a generated question's ``doc`` is an absolute path).
    root: Path = DATA

    @property
    def path(self) -> Path:
        return self.root / self.doc


@dataclass(frozen=True)
class Doc:
    name: str
    data: bytes
    namespace: str
    offsets: Any  # the token index: hit offsets are tokens
    #: The byte spans of the chunks the memory cuts it into: which answers a chunk can hold whole at all.
    chunks: list[tuple[int, int]]


def load_questions(name: str = "tuning") -> list[Question]:
    if name == "tuning":
        return [tuning_question(row) for row in read_jsonl(DATA / "qa.jsonl")]
    if name in ("frozen", "frozen-2"):
        root = FROZEN if name == "frozen" else FROZEN_2
        rows = [row for part in ("qa-a.jsonl", "qa-b.jsonl") for row in read_jsonl(root / part)]
        return [Question(**row, split=name, root=root) for row in rows]
    if name in WRITERS:
        root = DATA / name
        rows = [row for letter in WRITERS[name] for row in read_jsonl(root / f"qa-{letter}.jsonl")]
        return [Question(**row, split=name, root=root) for row in rows if row["type"] != "aggregate"]
    if name == "generated":
        made = generated.questions()
        return [Question(**dataclasses.asdict(m), split="generated", root=Path("/")) for m in made]
    raise ValueError(f"no question set {name!r}: one of {', '.join(SETS)}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tuning_question(row: dict[str, Any]) -> Question:
    """A tuning question, its kind `markdown` for a .md document as in the frozen set (Node's dgram.md was
    counted as prose), its split from its id: ``*-nNN`` were the held-out ones."""
    kind = "markdown" if row["doc"].endswith(".md") else row["kind"]
    return Question(**{**row, "kind": kind}, split="held-out" if "-n" in row["id"] else "dev")


def answer_span(data: bytes, answer: str) -> tuple[int, int]:
    raw = answer.encode("utf-8")
    start = data.find(raw)
    if start < 0:
        raise AssertionError(f"an answer is not in its document: {answer[:60]!r}")
    return start, start + len(raw)


def hit_span(doc: Doc, hit: Hit) -> tuple[int, int]:
    """The byte span of a returned chunk: its text, found where its first token starts."""
    raw = hit.text.encode("utf-8")
    start = doc.data.find(raw, int(doc.offsets[hit.offset]))
    if start < 0:
        raise AssertionError(f"a hit's text is not in {doc.name} at token {hit.offset}")
    return start, start + len(raw)


def judge(doc: Doc, answer: tuple[int, int], hits: list[Hit]) -> tuple[int | None, int | None]:
    """1-based rank of the first hit covering most of the answer, and of the first covering all of it."""
    spans = [hit_span(doc, h) if h.namespace == doc.namespace else (0, 0) for h in hits]
    return judge_spans(answer, spans, stripped(doc.data, answer))


def judge_spans(
    answer: tuple[int, int], spans: list[tuple[int, int]], held: tuple[int, int] | None = None
) -> tuple[int | None, int | None]:
    """The lenient rank (half of `answer`'s bytes covered) and the strict one (all of `held`, the answer without
    its edge whitespace: an indent copied with a JSON record's first line is not part of what it says)."""
    most = whole = None
    a, b = answer
    ha, hb = held or answer
    for rank, (s, e) in enumerate(spans, start=1):
        covered = max(0, min(b, e) - max(a, s))
        if most is None and 2 * covered >= b - a:
            most = rank
        if whole is None and s <= ha and hb <= e:
            whole = rank
    return most, whole


def holds(spans: Iterable[tuple[int, int]], answer: tuple[int, int]) -> bool:
    """Whether one of the spans holds the whole answer: if none does, no ranking can make a strict hit."""
    return any(s <= answer[0] and answer[1] <= e for s, e in spans)


def stripped(data: bytes, answer: tuple[int, int]) -> tuple[int, int]:
    """The answer without the whitespace at its ends: a passage copied with its line's indent starts before the
    chunk, which begins at the record's first character, so only this much of it can be held."""
    passage = data[answer[0] : answer[1]]
    lead = len(passage) - len(passage.lstrip())
    return answer[0] + lead, answer[0] + len(passage.rstrip())


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "recall@1": sum(1 for r in ranks if r == 1) / n,
        "recall@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=SETS, default="tuning", help="which questions to ask (default: tuning)")
    parser.add_argument("--out", type=Path, help="where to write the JSON results (default: results/retrieval-SET)")
    parser.add_argument(
        "--answers", type=Path, help="where every question's rank goes (default: listings/retrieval-SET.json)"
    )
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
        help="take the fixed-window baselines from an earlier run's --answers file (same questions; they don't "
        "depend on offprompt's ranking) instead of embedding the documents again",
    )
    parser.add_argument("--memory-name", default="retrieval-eval", help="the memory's name in --data-dir")
    parser.add_argument(
        "--reuse", action="store_true", help="with --data-dir: use the documents an earlier run stored there"
    )
    parser.add_argument("--postgres", help="a PostgreSQL DSN: rank with the shared memory's lexical index too")
    parser.add_argument(
        "--markdown", type=Path, nargs="+", metavar="ANSWERS", help="print earlier runs' tables as Markdown"
    )
    args = parser.parse_args()
    if args.markdown:
        for path in args.markdown:
            print("\n".join(markdown_tables(json.loads(path.read_text(encoding="utf-8")))) + "\n")
        return 0
    if args.reuse and not args.data_dir:
        parser.error("--reuse needs the --data-dir of an earlier run")
    if args.postgres and not args.lexical_only:
        parser.error("--postgres ranks by words only here (no Chroma server): add --lexical-only")
    if args.lexical_only:
        global MODES
        MODES = ("lexical",)

    questions = load_questions(args.set)
    commit = git_state()  # before the run: the code the ranks come from
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp)
        docs, indexing, answers = ask_memory(MemorySettings(name=args.memory_name, data_dir=data_dir), questions, args)
        if args.postgres:
            # PostgreSQL's full-text search beside FTS5 in the same run, on the same questions: its own memory.
            name = f"{args.memory_name}-{int(time.time())}"
            shared = MemorySettings(name=name, data_dir=data_dir / "postgres", postgres=args.postgres)
            _, indexing["postgres"], beside = ask_memory(shared, questions, args)
            add_postgres(answers, beside)
        if args.baseline_from:
            baselines = carried_baseline(args.baseline_from, questions)
        else:
            baselines = {} if args.no_baseline else baseline(docs, questions, Path(tmp))
        if not args.no_baseline:
            for qid, ranks in character_windows_bm25(docs, questions, Path(tmp)).items():
                baselines.setdefault("ranks", {}).setdefault(qid, {}).update(ranks)
    report = summarise(args.set, questions, answers, indexing, baselines, commit)
    report["documents"] = documents(docs, questions)
    # What bench/figures.py prints under a table made from this file (the commit is in `git`).
    report = {
        "command": shlex.join(["python", "bench/retrieval/eval.py", *sys.argv[1:]]),
        "load_average_at_start": load,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        **report,
    }
    print_report(report)
    named = f"retrieval-{args.set}{'-postgres' if args.postgres else ''}.json"
    out, listing = args.out or RESULTS / named, args.answers or LISTINGS / named
    for path, doc in ((out, summary(report)), (listing, report)):
        path.parent.mkdir(parents=True, exist_ok=True)
        # One space an indent level: a set's figures stay readable and bench/results under its 1 MB.
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {path}")
    return 0


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The figures a docs table reads, stamped: the report without its per-question ranks."""
    return {key: value for key, value in report.items() if key != "answers"}


def ask_memory(
    settings: MemorySettings, questions: list[Question], args: argparse.Namespace
) -> tuple[dict[str, Doc], dict[str, Any], list[dict[str, Any]]]:
    """Store the set's documents in a fresh memory and ask it every question."""
    memory = TaskMemory.open(settings)
    try:
        docs, indexing = index(memory, questions, reuse=args.reuse and not settings.postgres)
        return docs, indexing, run(memory, docs, questions)
    finally:
        memory.close()


def add_postgres(answers: list[dict[str, Any]], shared: list[dict[str, Any]]) -> None:
    """The shared memory's lexical ranks (PostgreSQL) beside the embedded one's (FTS5), as the `postgres` mode."""
    for row, other in zip(answers, shared, strict=True):
        assert row["id"] == other["id"]
        for scope in ("document", "memory"):
            row[f"{scope}/postgres"] = other[f"{scope}/lexical"]


def index(memory: TaskMemory, questions: list[Question], reuse: bool = False) -> tuple[dict[str, Doc], dict[str, Any]]:
    paths = {q.doc: q.path for q in questions}
    docs: dict[str, Doc] = {}
    store_ms: dict[str, float] = {}
    stored = {r.arguments.get("path"): r.namespace for r in memory.recent(1000)} if reuse else {}
    started = time.perf_counter()
    for name in sorted(paths):
        data = paths[name].read_bytes()
        t0 = time.perf_counter()
        namespace = stored.get(name)
        if namespace is None:
            artifact = from_block(mt.TextContent(text=data.decode("utf-8")))
            namespace = memory.store([artifact], tool="bench.read_file", arguments={"path": name}).namespace
        store_ms[name] = (time.perf_counter() - t0) * 1000
        offsets = memory.text.token_index(namespace, 0).offsets
        docs[name] = Doc(name, data, namespace, offsets, chunk_spans(data, artifact_kind(name)))
    text = memory.text
    assert text.wait_chunked(None, 600)  # type: ignore[attr-defined]
    if memory.text.__class__.__name__ == "SharedTextStorage":
        assert text.wait_indexed(600)  # type: ignore[attr-defined]  # chunked by the queue, in no process's count
    lexical_ready = time.perf_counter() - started
    if "dense" in MODES:
        assert text.wait_indexed(timeout=3600)  # type: ignore[attr-defined]
    embedded = time.perf_counter() - started
    for doc in docs.values():  # made by the indexer after the reference; here for certain, as a later call finds them
        text.records(doc.namespace, 0)
    per_doc = {
        name: {"bytes": len(doc.data), "chunks": len(doc.chunks), "store_ms": round(store_ms[name], 1)}
        for name, doc in docs.items()
    }
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


def artifact_kind(name: str) -> str:
    """The artifact kind the text block becomes: JSON documents are JSON artifacts."""
    return "json" if name.endswith(".json") else "text"


def chunk_spans(data: bytes, kind: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in text_chunks(data, kind)]


def run(memory: TaskMemory, docs: dict[str, Doc], questions: list[Question]) -> list[dict[str, Any]]:
    return [ask(memory, docs[q.doc], q) for q in questions]


def ask(memory: TaskMemory, doc: Doc, q: Question) -> dict[str, Any]:
    """One question in every mode and scope: the ranks of its first lenient and first strict hit."""
    span = answer_span(doc.data, q.answer)
    row: dict[str, Any] = {"id": q.id, "kind": q.kind, "type": q.type, "split": q.split}
    if q.private:
        row["private"] = True
    row["holdable"] = holds(doc.chunks, span)
    row["holdable_stripped"] = holds(doc.chunks, stripped(doc.data, span))
    for scope in ("document", "memory"):
        for mode in MODES:
            t0 = time.perf_counter()
            hits, _ = memory.query(q.question, doc.namespace if scope == "document" else None, TOP_K, mode=mode)
            ms = (time.perf_counter() - t0) * 1000
            most, whole = judge(doc, span, hits)
            row[f"{scope}/{mode}"] = {"rank": most, "rank_whole": whole, "ms": round(ms, 2)}
    if "hybrid" in MODES:
        hits, _ = memory.query(q.question, doc.namespace, PASSAGES + MORE, mode="hybrid")
        row["document/hybrid+more"] = as_answered(doc, span, hits, q.question)
        row["document/answer-text"] = answer_text.ask(memory, doc.namespace, q.question, q.answer)
    deep: list[int] = []
    for ranked in ("dense", "lexical"):
        if ranked not in MODES:
            continue
        hits, _ = memory.query(q.question, doc.namespace, POOL, mode=ranked)
        deep.extend(r for r in judge(doc, span, hits)[:1] if r is not None)
    row["document/either"] = min(deep, default=None)
    return row


def as_answered(doc: Doc, span: tuple[int, int], hits: list[Hit], question: str) -> dict[str, Any]:
    """Where `memory_query`'s default answer holds the answer, strict rule: in its 5 whole passages, or in the
    line range of one of its 10 one-line candidates; and whether that candidate's one line is in the answer
    (the model sees it and can tell), as the tool picks the line."""
    _, whole = judge(doc, span, hits)
    shown = False
    if whole is not None and whole > PASSAGES:
        found = hits[whole - 1]
        rows = found.text.splitlines(keepends=True) or [""]
        best = best_row([r.rstrip("\r\n") for r in rows], passage_terms(question))
        start = hit_span(doc, found)[0] + len("".join(rows[:best]).encode("utf-8"))
        shown = start < span[1] and span[0] < start + len(rows[best].encode("utf-8"))
    return {"rank_whole": whole, "line_shown": shown}


def baseline(docs: dict[str, Doc], questions: list[Question], tmp: Path) -> dict[str, Any]:
    """Where the issue started: fixed 200-token windows, ranked by the same MiniLM's cosine, or by BM25."""
    from offprompt.embedding import MiniLMEmbedding
    from offprompt.memory.storage.lexical import ChunkRecord, SqliteLexicalIndex

    model = MiniLMEmbedding() if "dense" in MODES else None
    lexical = SqliteLexicalIndex(tmp / "baseline-lexical.sqlite3")
    ranks: dict[str, dict[str, Any]] = {}
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
        answer = answer_span(docs[q.doc].data, q.answer)
        held = stripped(docs[q.doc].data, answer)
        ranks[q.id] = {"window_holdable": holds(spans, held)}
        if model:
            nearest = (vectors @ model.embed([q.question])[0]).argsort()[::-1][:TOP_K]
            nearest_spans = [spans[i] for i in nearest]
            ranks[q.id]["fixed-200/dense"] = as_ranks(judge_spans(answer, nearest_spans, held))
        found = lexical.search(q.question, [q.doc], TOP_K)
        ranks[q.id]["fixed-200/lexical"] = as_ranks(
            judge_spans(answer, [(h.record.start, h.record.end) for h in found], held)
        )
    lexical.close()
    return {
        "chunks": sum(len(spans) for spans, _ in windows.values()),
        "indexing_s": round(seconds, 2),
        "ranks": ranks,
    }


def character_windows_bm25(docs: dict[str, Doc], questions: list[Question], tmp: Path) -> dict[str, dict[str, Any]]:
    """A plain BM25 over 800-character windows (FTS5, no chunking, no fusion): what an outside judge compares
    `memory_query` with. Cheap (no embedding), so it runs beside a carried baseline too."""
    from offprompt.memory.storage.lexical import ChunkRecord, SqliteLexicalIndex

    lexical = SqliteLexicalIndex(tmp / "baseline-800c.sqlite3")
    windows: dict[str, list[tuple[int, int]]] = {}
    for name, doc in docs.items():
        text = doc.data.decode("utf-8")
        cuts = [len(text[:c].encode("utf-8")) for c in range(0, len(text), 800)] + [len(doc.data)]
        spans = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
        records = [ChunkRecord(name, 0, n, a, b, 0, "") for n, (a, b) in enumerate(spans)]
        lexical.add(name, 0, records, [doc.data[a:b].decode("utf-8") for a, b in spans], [""] * len(spans))
        windows[name] = spans
    ranks: dict[str, dict[str, Any]] = {}
    for q in questions:
        answer = answer_span(docs[q.doc].data, q.answer)
        found = lexical.search(q.question, [q.doc], TOP_K)
        judged = judge_spans(
            answer, [(h.record.start, h.record.end) for h in found], stripped(docs[q.doc].data, answer)
        )
        ranks[q.id] = {"window-800c/lexical": as_ranks(judged)}
    lexical.close()
    return ranks


def lexical_answer_lost(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Questions where the 800-character BM25 holds the answer first (strict) and memory_query's five passages
    (hybrid, scoped to the document) hold it nowhere: what fusion lost that words alone found."""
    first = [a for a in answers if (a.get("window-800c/lexical") or {}).get("rank_whole") == 1]
    lost = [
        a["id"]
        for a in first
        if not (a["document/hybrid"]["rank_whole"] is not None and a["document/hybrid"]["rank_whole"] <= PASSAGES)
    ]
    return {"bm25_first": len(first), "lost": len(lost), "ids": lost}


def as_ranks(judged: tuple[int | None, int | None]) -> dict[str, int | None]:
    return {"rank": judged[0], "rank_whole": judged[1]}


def carried_baseline(path: Path, questions: list[Question]) -> dict[str, Any]:
    """The fixed-window ranks of an earlier run's answer rows (an older run kept them elsewhere, lenient only)."""
    earlier = json.loads(path.read_text(encoding="utf-8"))
    rows = {a["id"]: a for a in earlier.get("answers", [])}
    if set(rows) != {q.id for q in questions} or not all("window_holdable" in a for a in rows.values()):
        raise SystemExit(f"{path} holds no baseline for these questions, by both rules: run without --baseline-from")
    kept = ("window_holdable", *BASELINES)
    ranks = {qid: {key: a[key] for key in kept if key in a} for qid, a in rows.items()}
    return {**earlier["baseline"], "ranks": ranks, "carried_from": str(path)}


def rankers(answers: list[dict[str, Any]]) -> list[str]:
    """The rankings every answer row holds, the three modes in the document first."""
    names = [f"{scope}/{mode}" for scope in ("document", "memory") for mode in (*MODES, "postgres")]
    return [r for r in (*names, *BASELINES) if answers and r in answers[0]]


def groups_of(row: dict[str, Any]) -> list[str]:
    keys = ["all", row["kind"], row["type"], row["split"], f"{row['split']}/{row['kind']}"]
    return keys + (["private"] if row.get("private") else [])


def score(answers: list[dict[str, Any]], ranker: str) -> dict[str, Any]:
    """Both rules' metrics for one ranking, overall and per group (kind, type, split, split/kind)."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in answers:
        for group in groups_of(a):
            by[group].append(a[ranker])
    return {
        group: {rule: metrics([r[RANK_FIELD[rule]] for r in ranks]) for rule in RULES}
        for group, ranks in sorted(by.items())
    }


def hit(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def paired(answers: list[dict[str, Any]], ranker: str, against: str) -> dict[str, Any]:
    """Per group, the questions `ranker` hits and `against` misses (wins), and the other way (losses), strict."""
    out: dict[str, Any] = {}
    for k in (1, 5):
        counts: dict[str, dict[str, int]] = defaultdict(lambda: {"wins": 0, "losses": 0, "both": 0, "neither": 0})
        for a in answers:
            ours, theirs = hit(a[ranker]["rank_whole"], k), hit(a[against]["rank_whole"], k)
            outcome = "both" if ours and theirs else "wins" if ours else "losses" if theirs else "neither"
            for group in ("all", a["kind"]):
                counts[group][outcome] += 1
        out[f"@{k}"] = dict(sorted(counts.items()))
    return out


def answered_by_group(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Per group, the share of answers held by the 5 passages, by the 10 candidates' line ranges (and of those,
    with the candidate's one line in the answer), and by either."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in answers:
        for group in ("all", a["kind"]):
            by[group].append(a["document/hybrid+more"])
    out: dict[str, Any] = {}
    for group, rows in sorted(by.items()):
        passages = sum(1 for r in rows if hit(r["rank_whole"], PASSAGES))
        lines = [r for r in rows if r["rank_whole"] is not None and r["rank_whole"] > PASSAGES]
        out[group] = {
            "questions": len(rows),
            "passages": round(passages / len(rows), 3),
            "candidates": round(len(lines) / len(rows), 3),
            "candidate_line_shown": round(sum(1 for r in lines if r["line_shown"]) / len(rows), 3),
            "either": round((passages + len(lines)) / len(rows), 3),
        }
    return out


def holdable_counts(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind, how many answers no chunk of the memory (or no fixed window) holds whole, and how many no
    chunk holds even with the whitespace at the answer's ends left out."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in answers:
        for group in ("all", a["kind"]):
            counts[group]["questions"] += 1
            counts[group]["no_chunk_holds"] += not a["holdable"]
            counts[group]["no_chunk_holds_stripped"] += not a["holdable_stripped"]
            if "window_holdable" in a:
                counts[group]["no_window_holds"] += not a["window_holdable"]
    return {group: dict(c) for group, c in sorted(counts.items())}


def git_state() -> dict[str, Any]:
    """The commit the run was made on, and what differed from it in the code that decides the ranks."""

    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted": git("status", "--porcelain", "--", "server", "bench/retrieval").splitlines(),
        "offprompt_from": str(Path(offprompt.__file__).parent),
    }


def documents(docs: dict[str, Doc], questions: list[Question]) -> list[dict[str, Any]]:
    paths = {q.doc: q.path for q in questions}
    return [
        {"doc": name, "path": str(paths[name]), "bytes": len(doc.data), "sha256": hashlib.sha256(doc.data).hexdigest()}
        for name, doc in sorted(docs.items())
    ]


def summarise(
    set_name: str,
    questions: list[Question],
    answers: list[dict[str, Any]],
    indexing: dict[str, Any],
    baselines: dict[str, Any],
    commit: dict[str, Any],
) -> dict[str, Any]:
    for a in answers:
        a.update(baselines.get("ranks", {}).get(a["id"], {}))
    results: dict[str, Any] = {}
    for ranker in rankers(answers):
        results[ranker] = {"by": score(answers, ranker)}
        if "ms" in answers[0][ranker]:
            results[ranker]["query_ms_p50"] = round(statistics.median(a[ranker]["ms"] for a in answers), 2)
    either = [a["document/either"] for a in answers]
    results["document/either"] = {
        "top5": sum(1 for r in either if r is not None and r <= 5) / len(answers),
        f"top{POOL}": sum(1 for r in either if r is not None) / len(answers),
    }
    if "document/hybrid+more" in answers[0]:
        results["document/hybrid+more"] = answered_by_group(answers)
    if "document/answer-text" in answers[0]:
        results["document/answer-text"] = answer_text.by_group(answers)
    if {"document/hybrid", "fixed-200/lexical"} <= answers[0].keys():
        results["paired/hybrid-vs-fixed-200-bm25"] = paired(answers, "document/hybrid", "fixed-200/lexical")
    if {"document/hybrid", "window-800c/lexical"} <= answers[0].keys():
        results["lexical-answer-lost"] = lexical_answer_lost(answers)
    return {
        "set": set_name,
        "questions": len(questions),
        "hit_rules": {
            "strict": "a returned chunk of the right document holds the whole answer passage (its edge whitespace "
            "left out)",
            "lenient": "a returned chunk of the right document covers at least half of the answer passage's bytes",
        },
        "git": commit,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "indexing": indexing,
        "baseline": {k: v for k, v in baselines.items() if k != "ranks"},
        "holdable": holdable_counts(answers),
        "results": results,
        "answers": answers,
    }


def columns(report: dict[str, Any]) -> list[str]:
    """All, the splits where a set has more than one, then the kinds the set holds."""
    by = next(r["by"] for key, r in report["results"].items() if key.startswith("document/") and "by" in r)
    splits = sorted({a["split"] for a in report["answers"]}, key=lambda s: (s != "dev", s))
    return ["all"] + (splits if len(splits) > 1 else []) + [k for k in KINDS if k in by]


def label(ranker: str) -> str:
    scope, mode = ranker.split("/")
    if ranker in LABELS:
        return f"*{LABELS[ranker]}*"
    return f"**{mode}**" if mode == "hybrid" and scope == "document" else mode


def markdown_tables(report: dict[str, Any]) -> list[str]:
    """Per rule, within the document: R@1 / R@5 / MRR@10 per kind for the modes and the fixed-window baselines."""
    cols = columns(report)
    n = {c: sum(1 for a in report["answers"] if c in groups_of(a)) for c in cols}
    lines = [f"{report['set']} set ({report['questions']} questions), within the document: R@1 / R@5 / MRR@10"]
    lines += ["", f"| rule | ranking | {' | '.join(f'{c} ({n[c]})' for c in cols)} |"]
    lines.append("| --- | --- | " + " | ".join("---:" for _ in cols) + " |")
    shown = [r for r in (*(f"document/{m}" for m in (*MODES, "postgres")), *BASELINES) if r in report["results"]]
    for rule in RULES:
        for ranker in shown:
            by = report["results"][ranker]["by"]
            cells = [cell(by[c][rule]) if c in by else "-" for c in cols]
            lines.append(f"| {rule} | {label(ranker)} | {' | '.join(cells)} |")
    return lines


def cell(m: dict[str, float]) -> str:
    return f"{m['recall@1']:.2f} / {m['recall@5']:.2f} / {m['mrr@10']:.2f}"


def print_report(report: dict[str, Any]) -> None:
    ix = report["indexing"]
    print(
        f"{report['set']}: {report['questions']} questions over {ix['documents']} documents ({ix['bytes']:,} bytes, "
        f"{ix['chunks']:,} chunks), commit {report['git']['commit'][:12]}"
    )
    if ix.get("reused"):
        print("indexing: not timed (--reuse: the documents an earlier run stored and embedded)")
    else:
        print(
            f"indexing: store {ix['store_ms_total']:.0f} ms in all; searchable by words after "
            f"{ix['lexical_ready_s']:.1f} s, fully embedded after {ix['fully_indexed_s']:.1f} s "
            f"({ix['chunks_per_s']:.1f} chunks/s)"
        )
    print()
    print("\n".join(markdown_tables(report)))
    print_memory_scope(report)
    print_paired(report)
    lost = report["results"].get("lexical-answer-lost")
    if lost:
        print(
            f"\nBM25 over 800-character windows holds the answer first (strict) for {lost['bm25_first']} questions; "
            f"memory_query's five passages hold it nowhere for {lost['lost']}: {', '.join(lost['ids']) or '-'}"
        )
    print_answered(report)
    print_holdable(report)
    either = report["results"]["document/either"]
    print(
        f"\nthe answer is (leniently) in the top 5 of dense or lexical for {either['top5']:.3f} of the questions, "
        f"in the top {POOL} of one of them for {either[f'top{POOL}']:.3f}"
    )
    base = report["baseline"]
    if base:
        print(f"\nfixed 200-token windows: {base['chunks']:,} chunks, embedded in {base['indexing_s']:.1f} s")


def print_memory_scope(report: dict[str, Any]) -> None:
    print("\nover the whole memory (all the set's documents), all questions: R@1 / R@5 / MRR@10")
    print("| ranking | strict | lenient | query p50 |\n| --- | ---: | ---: | ---: |")
    for mode in (m for m in (*MODES, "postgres") if f"memory/{m}" in report["results"]):
        r = report["results"][f"memory/{mode}"]
        print(
            f"| {mode} | {cell(r['by']['all']['strict'])} | {cell(r['by']['all']['lenient'])} | "
            f"{r['query_ms_p50']:.0f} ms |"
        )


def print_paired(report: dict[str, Any]) -> None:
    pairs = report["results"].get("paired/hybrid-vs-fixed-200-bm25")
    if not pairs:
        return
    groups = ["all"] + [k for k in KINDS if k in pairs["@1"]]
    print("\nhybrid against the fixed-window BM25, strict rule: wins / losses (both hit, neither hit)")
    print(f"| at | {' | '.join(groups)} |\n| --- | " + " | ".join("---:" for _ in groups) + " |")
    for at, counts in pairs.items():
        cells = [f"{c['wins']} / {c['losses']} ({c['both']}, {c['neither']})" for c in (counts[g] for g in groups)]
        print(f"| R{at} | {' | '.join(cells)} |")


def print_answered(report: dict[str, Any]) -> None:
    answered = report["results"].get("document/hybrid+more")
    if not answered:
        return
    groups = ["all"] + [k for k in KINDS if k in answered]
    print(
        f"\nmemory_query's default answer (hybrid, in the document), strict rule: the answer held by its {PASSAGES} "
        f"passages, by the line range of one of its {MORE} one-line candidates (with that line in the answer), "
        "by either"
    )
    print(f"| held by | {' | '.join(groups)} |\n| --- | " + " | ".join("---:" for _ in groups) + " |")
    for key, what in (
        ("passages", f"the {PASSAGES} passages"),
        ("candidates", f"the {MORE} candidates' lines"),
        ("candidate_line_shown", "  of which the line shown is in the answer"),
        ("either", "either"),
    ):
        print(f"| {what} | {' | '.join(f'{answered[g][key]:.2f}' for g in groups)} |")
    shown = report["results"].get("document/answer-text")
    if shown:
        print("\nthe default answer's text as the model reads it: holds the answer (strict), and its tokens")
        print(f"| | {' | '.join(groups)} |\n| --- | " + " | ".join("---:" for _ in groups) + " |")
        for key in ("holds", "tokens_p50", "tokens_p90", "tokens_max"):
            print(f"| {key} | {' | '.join(str(shown[g][key]) if g in shown else '-' for g in groups)} |")


def print_holdable(report: dict[str, Any]) -> None:
    counts = report["holdable"]
    groups = ["all"] + [k for k in KINDS if k in counts]
    print("\nanswers no chunk holds whole (no strict hit is possible), of the questions")
    print(f"| chunks | {' | '.join(groups)} |\n| --- | " + " | ".join("---:" for _ in groups) + " |")
    for key, what in (
        ("no_chunk_holds", "offprompt's"),
        ("no_chunk_holds_stripped", "offprompt's, the answer's edge whitespace left out"),
        ("no_window_holds", "fixed 200-token"),
    ):
        if key in counts["all"]:
            cells = [f"{counts[g][key]} of {counts[g]['questions']}" for g in groups]
            print(f"| {what} | {' | '.join(cells)} |")


if __name__ == "__main__":
    sys.exit(main())
