#!/usr/bin/env python3
"""Verify the retrieval QA set in this folder.

Checks, for every line of qa.jsonl:
  * the record has exactly the fields id, doc, kind, type, question, answer;
  * ids are unique; kind is code|prose|logs|json; type is identifier|paraphrase|factual;
  * the document exists under this folder and is 20 KB .. 300 KB;
  * the answer is an exact substring occurring exactly once in the document
    (counting overlapping occurrences) and spans 1..5 lines.
Also checks that every document in docs/ is listed in SOURCES.md, that there
are at least 16 questions per kind, and that docs/ totals under 2 MB.

Usage: python check_qa.py   (exit status 0 when everything passes)
"""

from __future__ import annotations

import collections
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
FIELDS = {"id", "doc", "kind", "type", "question", "answer"}
KINDS = {"code", "prose", "logs", "json"}
TYPES = {"identifier", "paraphrase", "factual"}
MIN_DOC, MAX_DOC = 20_000, 300_000
MAX_TOTAL = 2_000_000
MIN_PER_KIND = 16


def count_overlapping(haystack: str, needle: str) -> int:
    n, start = 0, 0
    while True:
        i = haystack.find(needle, start)
        if i < 0:
            return n
        n += 1
        start = i + 1


def main() -> int:
    errors: list[str] = []
    docs_cache: dict[str, str] = {}
    ids: set[str] = set()
    per_kind = collections.Counter()
    per_type = collections.Counter()
    per_kind_type = collections.Counter()
    per_doc = collections.Counter()

    lines = (HERE / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"line {n}: bad JSON: {e}")
            continue
        rid = r.get("id", f"line {n}")
        if set(r) != FIELDS:
            errors.append(f"{rid}: fields {sorted(r)} != {sorted(FIELDS)}")
            continue
        if rid in ids:
            errors.append(f"{rid}: duplicate id")
        ids.add(rid)
        if r["kind"] not in KINDS:
            errors.append(f"{rid}: bad kind {r['kind']!r}")
        if r["type"] not in TYPES:
            errors.append(f"{rid}: bad type {r['type']!r}")
        if not r["question"].strip():
            errors.append(f"{rid}: empty question")
        path = HERE / r["doc"]
        if not path.is_file():
            errors.append(f"{rid}: missing doc {r['doc']}")
            continue
        if r["doc"] not in docs_cache:
            docs_cache[r["doc"]] = path.read_bytes().decode("utf-8")
        text = docs_cache[r["doc"]]
        ans = r["answer"]
        if not ans.strip():
            errors.append(f"{rid}: empty answer")
            continue
        nlines = ans.count("\n") + 1
        if not 1 <= nlines <= 5:
            errors.append(f"{rid}: answer spans {nlines} lines (want 1..5)")
        hits = count_overlapping(text, ans)
        if hits != 1:
            errors.append(f"{rid}: answer occurs {hits} times in {r['doc']} (want exactly 1)")
        per_kind[r["kind"]] += 1
        per_type[r["type"]] += 1
        per_kind_type[(r["kind"], r["type"])] += 1
        per_doc[r["doc"]] += 1

    # documents
    sources = (HERE / "SOURCES.md").read_text(encoding="utf-8") if (HERE / "SOURCES.md").is_file() else ""
    if not sources:
        errors.append("SOURCES.md missing or empty")
    total = 0
    print("documents:")
    for p in sorted((HERE / "docs").iterdir()):
        if not p.is_file():
            continue
        size = p.stat().st_size
        total += size
        rel = f"docs/{p.name}"
        print(f"  {rel:45s} {size:8d} bytes  {per_doc.get(rel, 0):3d} questions")
        if not MIN_DOC <= size <= MAX_DOC:
            errors.append(f"{rel}: size {size} outside {MIN_DOC}..{MAX_DOC}")
        if p.name not in sources:
            errors.append(f"{rel}: not listed in SOURCES.md")
        if rel not in per_doc:
            errors.append(f"{rel}: no question uses it")
    print(f"  total {total} bytes")
    if total >= MAX_TOTAL:
        errors.append(f"docs/ totals {total} bytes (want < {MAX_TOTAL})")
    for k in sorted(KINDS):
        if per_kind[k] < MIN_PER_KIND:
            errors.append(f"kind {k}: {per_kind[k]} questions (want >= {MIN_PER_KIND})")

    print(f"questions: {sum(per_kind.values())}")
    print("per kind x type:")
    for k in sorted(KINDS):
        row = "  ".join(f"{t}={per_kind_type[(k, t)]}" for t in sorted(TYPES))
        print(f"  {k:6s} {per_kind[k]:3d}   {row}")
    print("per type: " + "  ".join(f"{t}={per_type[t]}" for t in sorted(TYPES)))

    if errors:
        print(f"\nFAILED: {len(errors)} problem(s)")
        for e in errors:
            print("  - " + e)
        return 1
    print("\nOK: every answer occurs exactly once in its document")
    return 0


if __name__ == "__main__":
    sys.exit(main())
