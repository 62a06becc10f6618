"""Deterministic inputs: real text from the retrieval corpus, noise images, real questions."""

from __future__ import annotations

import io
import json
from functools import cache

from bench.context import REPO

DOCS = REPO / "bench" / "retrieval" / "data" / "docs"
QA = REPO / "bench" / "retrieval" / "data" / "qa.jsonl"

KB = 1000
MB = 1000 * KB


@cache
def _docs() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(DOCS.iterdir()) if p.is_file()]


def mixed_text(n_bytes: int) -> str:
    """About `n_bytes` (within a line) of real code, prose, logs and JSON, the corpus's files in turn.

    Past the corpus's 0.9 MB the files repeat, each pass under its own header line.
    """
    parts: list[str] = []
    size = 0
    round_no = 0
    while size < n_bytes:
        for name, text in _docs():
            header = f"===== {name} (pass {round_no}) =====\n"
            parts.append(header)
            parts.append(text if text.endswith("\n") else text + "\n")
            size += len(header.encode()) + len(text.encode()) + 1
            if size >= n_bytes:
                break
        round_no += 1
    data = "".join(parts).encode("utf-8")[:n_bytes]
    cut = data.rfind(b"\n") + 1
    return data[: cut or len(data)].decode("utf-8", errors="ignore")


def noise_png(n_bytes: int, seed: int = 5) -> bytes:
    """A PNG of random pixels of about `n_bytes`: incompressible, like a photo or screenshot's worst case."""
    import numpy as np
    from PIL import Image

    side = int((n_bytes / 3) ** 0.5)
    pixels = np.random.default_rng(seed).integers(0, 256, size=(side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()


@cache
def questions() -> list[str]:
    """The retrieval set's real questions, used as query strings."""
    return [json.loads(line)["question"] for line in QA.read_text(encoding="utf-8").splitlines() if line.strip()]
