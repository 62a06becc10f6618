"""Hybrid ranking: what each candidate chunk of a query is scored on, and how the scores are combined.

Every candidate (a chunk found by words, by meaning or both) can be described by a few cheap features, each
from 0 to 1 (``cosine`` from -1 to 1):

- ``lexical``: its BM25 over the best candidate's (0 stays "no shared word");
- ``dense``: its cosine similarity, min-max scaled over the candidates (one model's cosines crowd a narrow band);
  a chunk with no vector (not embedded yet, or its embedding failed) takes the lower median of the others (as 0
  it lost to any embedded chunk while a big output was indexing: docs/dev/retrieval-evaluation.md);
- ``coverage``: the IDF-weighted share of the query's words it holds (:mod:`coverage`), which lifts the chunk
  holding most of the question over one that repeats a single word of it;
- ``defines``: the share of the query's words spelled by a name the chunk defines with ``def``, ``class`` or
  ``function`` (``register archive format`` ↔ ``def register_archive_format``);
- ``defines_value``: the same for a name assigned at the start of a line (``DEFAULT_BUFFER_SIZE = 8 * 1024``);
- ``context``: the share of the query's words in the chunk's context line (its section, its JSON path);
- ``length``: its size on a log scale (0 for nothing, 1 for 4 KB or more);
- ``cosine``: its raw cosine similarity (the lower median of the others without a vector);
- ``local``: the share of the query's words held by the chunk's best :data:`LOCAL_LINES` consecutive lines,
  which tells the lines that answer from a big chunk that spreads the same words over its length.

The score is the weighted sum of the features; one with no weight is not computed. Scores that are combined
rather than ranks keep a clear winner of one ranking ahead of chunks both rankings find middling.
:data:`HAND_SET` are the weights in use, chosen by hand: the two scores and coverage on the retrieval eval's
tuning questions, the definitions so that a chunk defining what the query names comes before those that only
mention it, ``local`` on the tuning questions with the others fixed (leave one document out, every fold but one
chose 1.0). The other features are there for bench/retrieval/fit_fusion.py, which fits weights over all of
them by document-wise cross-validation: so far no fit has beaten these on held-out documents
(docs/dev/retrieval-evaluation.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Final

from offprompt.memory.storage.base import Candidate
from offprompt.memory.storage.coverage import stem
from offprompt.memory.storage.lexical import STOPWORDS, name_parts

__all__ = ["FEATURES", "HAND_SET", "features", "fuse"]

FEATURES: Final = (
    "lexical", "dense", "coverage", "defines", "defines_value", "context", "length", "cosine", "local",
)  # fmt: skip
#: A chunk that defines what the query names (a name spelling at least DEFINES_AT_LEAST of its words) gains
#: up to as much as the two scores together: it ranks above the chunks that only mention the name.
HAND_SET: Final[Mapping[str, float]] = {
    "lexical": 0.4,
    "dense": 0.6,
    "coverage": 0.4,
    "defines": 1.0,
    "defines_value": 1.0,
    "local": 1.0,
}
#: The share of the query's words a defined name must spell for the query to name it: "default buffer size"
#: names DEFAULT_BUFFER_SIZE, a question of seven words that holds "posix spawn" does not name _use_posix_spawn.
DEFINES_AT_LEAST: Final = 0.5

#: A name defined by a keyword (Python's ``def``/``class``, JavaScript's ``function``/``class``) at any indent
#: (group 1), or assigned at the start of a line, a module's constant or top-level variable (group 2).
_DEFINITION: Final = re.compile(
    r"^(?:[ \t]*(?:export[ \t]+)?(?:async[ \t]+)?(?:def|class|function)[ \t]+([A-Za-z_$][\w$]*)"
    r"|(?:(?:export[ \t]+)?(?:const|let|var)[ \t]+)?([A-Za-z_$][\w$]*)[ \t]*(?::[^=\n]*)?=(?!=))",
    re.M,
)
_LENGTH_SCALE: Final = math.log(4097)
LOCAL_LINES: Final = 3


@lru_cache(maxsize=1 << 14)
def _spelled(text: str) -> frozenset[str]:
    """The words a query or a name spells, as the features compare them: parts of words and identifiers,
    lower-case, stemmed, stop words left out unless there is nothing else (``SameFileError``: file, error)."""
    every = name_parts(text)
    kept = [p for p in every if p not in STOPWORDS] or every
    return frozenset(stem(p) for p in kept)


def _definitions(text: str) -> tuple[list[str], list[str]]:
    """The names a text defines by keyword, and those it assigns at the start of a line."""
    if "=" not in text and "def " not in text and "class " not in text and "function " not in text:
        return [], []
    found = _DEFINITION.findall(text)
    return [d for d, _ in found if d], [a for _, a in found if a]


def _defines(names: Sequence[str], words: frozenset[str]) -> float:
    """The largest share of `words` that one of `names` spells whole (each of its parts is a query word), 0 if
    it is below DEFINES_AT_LEAST."""
    best = 0
    for name in names:
        parts = _spelled(name)
        if parts and parts <= words:
            best = max(best, len(parts))
    share = best / len(words) if words else 0.0
    return share if share >= DEFINES_AT_LEAST else 0.0


def _local(text: str, words: frozenset[str]) -> float:
    """The largest share of `words` that LOCAL_LINES consecutive lines of `text` hold."""
    if not words:
        return 0.0
    held: list[frozenset[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # A word's stem starts the words it stands for: a line holding none of them as text is not spelled out.
        lowered = line.lower()
        held.append(_spelled(line) & words if any(w in lowered for w in words) else frozenset())
    best = 0
    for k in range(len(held)):
        best = max(best, len(frozenset().union(*held[k : k + LOCAL_LINES])))
        if best == len(words):
            break
    return best / len(words)


def features(query: str, candidates: Sequence[Candidate], names: Sequence[str] = FEATURES) -> list[list[float]]:
    """Each candidate's features `names` (of :data:`FEATURES`), in that order; their `coverage` must be set."""
    words = _spelled(query)
    top = max((c.scores.get("lexical", 0.0) for c in candidates), default=0.0)
    similar = [c.scores["dense"] for c in candidates if "dense" in c.scores]
    low, high = (min(similar), max(similar)) if similar else (0.0, 0.0)

    def lexical(c: Candidate) -> float:
        return c.scores.get("lexical", 0.0) / top if top > 0 else 0.0

    def scaled(similarity: float) -> float:
        return (similarity - low) / (high - low) if high > low else 0.0

    # A chunk with no vector (its text stored seconds ago, the embedder behind; or its embedding failed) is not
    # the least similar: its similarity is unknown, so it takes the lower middle one of those known (with two,
    # the lower: min-max over two points says little).
    middle = sorted(similar)[(len(similar) - 1) // 2] if similar else 0.0

    def dense(c: Candidate) -> float:
        return scaled(c.scores.get("dense", middle))

    found: dict[int, tuple[list[str], list[str]]] = {}

    def definitions(c: Candidate) -> tuple[list[str], list[str]]:
        """Looked for once a candidate: both definition features read them."""
        if id(c) not in found:
            found[id(c)] = _definitions(c.text)
        return found[id(c)]

    def context(c: Candidate) -> float:
        return len(words & _spelled(c.record.context)) / len(words) if words and c.record.context else 0.0

    compute: dict[str, Callable[[Candidate], float]] = {
        "lexical": lexical,
        "dense": dense,
        "coverage": lambda c: c.coverage,
        "defines": lambda c: _defines(definitions(c)[0], words),
        "defines_value": lambda c: _defines(definitions(c)[1], words),
        "context": context,
        "length": lambda c: min(1.0, math.log(len(c.text) + 1) / _LENGTH_SCALE),
        "cosine": lambda c: c.scores.get("dense", middle),
        "local": lambda c: _local(c.text, words),
    }
    columns = [compute[name] for name in names]
    return [[f(c) for f in columns] for c in candidates]


def fuse(query: str, candidates: Sequence[Candidate], weights: Mapping[str, float] = HAND_SET) -> None:
    """Set each candidate's hybrid score: the weighted sum of its features (only those with a weight are
    computed)."""
    used = [name for name in FEATURES if weights.get(name, 0.0)]
    w = [weights[name] for name in used]
    for c, row in zip(candidates, features(query, candidates, used), strict=True):
        c.score = sum(a * b for a, b in zip(w, row, strict=True))
