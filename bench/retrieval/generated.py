"""Questions that need no writer, made from real files on this machine that neither question set uses.

Code: for every top-level ``def``, ``class`` and ``CONSTANT = ...`` of ten standard-library modules, a question
in the name's plain words ("where is register archive format defined", "what is default buffer size") whose
answer is the defining line. JSON: for every record of two real JSON files that carries a ``description``, the
description with its identifiers dropped as the question and the description string, as it stands in the file,
as the answer. The files are read where they are installed; nothing is copied. Every answer occurs exactly once
in its document, and the sample is drawn with a fixed seed, so two runs on the same files ask the same questions.

Usage: .venv/bin/python bench/retrieval/generated.py   (prints the counts per document and a few questions)
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

STDLIB = Path("/root/.pyenv/versions/3.11.7/lib/python3.11")
#: Ten modules of 20-250 KB that neither the tuning nor the frozen questions use (those hold subprocess,
#: argparse and configparser; shutil was kept for the writers' examples).
MODULES = (
    "tarfile.py",
    "zipfile.py",
    "gzip.py",
    "http/client.py",
    "logging/handlers.py",
    "tempfile.py",
    "inspect.py",
    "difflib.py",
    "smtplib.py",
    "calendar.py",
)
#: An API model's examples (botocore's EC2 examples, not its SQS or Scheduler models) and a JSON Schema
#: (CMake's presets schema, from Debian's cmake-data).
JSON_DOCS = (
    STDLIB / "site-packages/botocore/data/ec2/2016-11-15/examples-1.json",
    Path("/usr/share/cmake-3.25/Help/manual/presets/schema.json"),
)
SEED = 20261201
#: At most this many questions per kind, so that neither kind outweighs the other (about 400 in all).
CAP_PER_KIND = 200
#: A description needs this many plain words left once its identifiers are dropped to be a question.
MIN_QUESTION_WORDS = 3

CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")
#: A name's words: an acronym (``HTTP`` of ``HTTPConnection``), a capitalised or lower-case word, digits.
NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
#: A word a user would not type as plain words: CamelCase, snake_case, digits among letters, code punctuation.
IDENTIFIER = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]|_|[A-Za-z]\d|\d[A-Za-z]|[./\\:$`{}<>\[\]()=#@*|\"]")
EDGE_PUNCTUATION = ".,;:!?'\"()[]"
DESCRIPTION_KEY = re.compile(rb'"description"\s*:\s*(?=")')
DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Made:
    """One generated question, in the fields of the eval's questions (``doc`` is the file's absolute path)."""

    id: str
    doc: str
    kind: str
    type: str
    question: str
    answer: str
    private: bool = False


@dataclass(frozen=True)
class Source:
    path: str
    kind: str
    bytes: int
    sha256: str


def name_words(name: str) -> list[str]:
    """``DEFAULT_BUFFER_SIZE`` -> default buffer size, ``SameFileError`` -> same file error."""
    return [w.lower() for part in name.split("_") for w in NAME_WORD.findall(part)]


def count_overlapping(haystack: bytes, needle: bytes) -> int:
    n, start = 0, 0
    while (i := haystack.find(needle, start)) >= 0:
        n, start = n + 1, i + 1
    return n


def top_level_names(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(name, what it is, 1-based line) of each definition and constant directly in the module's body."""
    found: list[tuple[str, str, int]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.name, "function", node.lineno))
        elif isinstance(node, ast.ClassDef):
            found.append((node.name, "class", node.lineno))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.append((node.targets[0].id, "constant", node.lineno))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, "constant", node.lineno))
    return [(name, what, line) for name, what, line in found if what != "constant" or CONSTANT.fullmatch(name)]


def code_questions(path: Path) -> list[Made]:
    data = path.read_bytes()
    lines = data.decode("utf-8").split("\n")
    module = path.relative_to(STDLIB).with_suffix("").as_posix()
    made: list[Made] = []
    for name, what, lineno in top_level_names(ast.parse(data)):
        words = name_words(name)
        answer = lines[lineno - 1]
        # Fewer than two words is a bare identifier, not a question in plain words; a line that recurs has no
        # single right place.
        if len(words) < 2 or count_overlapping(data, answer.encode("utf-8")) != 1:
            continue
        text = " ".join(words)
        question = f"what is {text}" if what == "constant" else f"where is {text} defined"
        made.append(Made(f"code:{module}:{name}", str(path), "code", what, question, answer, name.startswith("_")))
    return unique_questions(made)


def descriptions(data: bytes) -> list[tuple[int, str, str]]:
    """(byte offset, decoded value, literal as it stands in the file) of every ``"description": "..."``."""
    text = data.decode("utf-8")
    found = []
    for match in DESCRIPTION_KEY.finditer(data):
        start = len(data[: match.end()].decode("utf-8"))  # the decoder counts characters, not bytes
        value, end = DECODER.raw_decode(text, start)
        if isinstance(value, str):
            found.append((match.end(), value, text[start + 1 : end - 1]))
    return found


def plain_words(description: str) -> list[str]:
    """The description's words a user would type, identifiers and code-ish words dropped, in lower case."""
    kept = []
    for raw in description.split():
        word = raw.strip(EDGE_PUNCTUATION)
        if word and not IDENTIFIER.search(word):
            kept.append(word.lower())
    return kept


def json_questions(path: Path) -> list[Made]:
    data = path.read_bytes()
    stem = f"{path.parent.parent.name}-{path.stem}" if "botocore" in path.parts else path.parent.name + "-schema"
    made: list[Made] = []
    for offset, value, literal in descriptions(data):
        words = plain_words(value)
        if len(words) < MIN_QUESTION_WORDS or count_overlapping(data, literal.encode("utf-8")) != 1:
            continue
        made.append(Made(f"json:{stem}:{offset}", str(path), "json", "description", " ".join(words), literal))
    return unique_questions(made)


def unique_questions(made: list[Made]) -> list[Made]:
    """Drops questions asked twice of one document: they could not tell their two answers apart."""
    asked = Counter(m.question for m in made)
    return [m for m in made if asked[m.question] == 1]


def candidates() -> list[Made]:
    made = [q for module in MODULES for q in code_questions(STDLIB / module)]
    return made + [q for path in JSON_DOCS for q in json_questions(path)]


def questions(cap: int = CAP_PER_KIND, seed: int = SEED) -> list[Made]:
    """The generated set: at most ``cap`` questions per kind, drawn with ``seed``, in document order."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Made]] = {}
    for q in candidates():
        by_kind.setdefault(q.kind, []).append(q)
    order = {q.id: n for n, q in enumerate(candidates())}
    chosen = [q for kind in sorted(by_kind) for q in rng.sample(by_kind[kind], min(cap, len(by_kind[kind])))]
    return sorted(chosen, key=lambda q: order[q.id])


def sources() -> list[Source]:
    """Every file the questions are made from, with what identifies its bytes."""
    paths = [(STDLIB / m, "code") for m in MODULES] + [(p, "json") for p in JSON_DOCS]
    return [Source(str(p), kind, p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()) for p, kind in paths]


def main() -> int:
    made = candidates()
    chosen = questions()
    per_doc = Counter(q.doc for q in made)
    kept = Counter(q.doc for q in chosen)
    for source in sources():
        counts = f"{per_doc[source.path]:>4} made, {kept[source.path]:>3} kept"
        print(f"{source.kind:5} {source.bytes:>7,} B  {counts}  {source.path}")
    print(f"{len(chosen)} questions ({sum(q.private for q in chosen)} on private names)")
    for q in random.Random(0).sample(chosen, 6):
        print(json.dumps({"question": q.question, "answer": q.answer[:100]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
