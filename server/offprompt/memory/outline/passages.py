"""The passages of a just-stored text that best answer an intent, found at once without any index.

BM25 over overlapping windows of the raw text (about 800 characters, every 400), with the intent's words
matched as word prefixes, case-insensitively ("timeout" finds ``TimeoutExpired``). Plain windowed BM25 is
what the chunked lexical index is measured against, and it needs nothing built: one regular-expression pass
over the text (tens of milliseconds for 1 MB), so the reference can carry the answer while the indexes are
still being built in the background.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from offprompt.memory.outline.addressing import LineIndex, chars_to_bytes
from offprompt.tokens import TokenIndex

WINDOW_CHARS = 800
STEP_CHARS = 400
MAX_TERMS = 16
_K1 = 1.2
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?|_+\w+", re.UNICODE)
_STOP_WORDS = (
    "a an and are as at be by can do does did for from has have how i if in into is it its me my not of on or "
    "our should so than that the their them then there these this those to was we what when where which who "
    "why will with you your find show get give tell want need all any about"
)
_STOP = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True, slots=True)
class Passage:
    """Bytes ``[start, end)`` of the text, from 1-based ``line`` to ``end_line``; ``offset``: the token that
    holds ``start``."""

    text: str
    line: int
    end_line: int
    offset: int
    score: float
    start: int
    end: int


def terms(intent: str) -> list[str]:
    """The intent's words worth matching: no stop words, no single letters, at most :data:`MAX_TERMS`."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(intent.lower()):
        word = word.strip("_'")
        if len(word) > 1 and word not in _STOP:
            seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def best(
    data: bytes, intent: str, tokens: TokenIndex, lines: LineIndex, top: int = 3, max_tokens: int = 200
) -> list[Passage]:
    """Up to ``top`` passages that do not overlap, best first, each at most ``max_tokens`` long."""
    words = terms(intent)
    text = data.decode("utf-8")
    if not words or not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = text  # a character whose lower case is longer: match case-sensitively rather than misplace
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    hits: list[tuple[int, int]] = []  # (position, term)
    index_of = {w: k for k, w in enumerate(words)}
    for m in pattern.finditer(lowered):
        at = m.start()
        if at and (lowered[at - 1].isalnum()):
            continue  # inside a word, not at its start
        hits.append((at, index_of[m.group()]))
    if not hits:
        return []
    windows = max(1, -(-max(len(text) - WINDOW_CHARS, 0) // STEP_CHARS) + 1)
    tf = np.zeros((windows, len(words)), dtype=np.float64)
    found = np.asarray(hits, dtype=np.int64)
    for shift in (0, 1):  # each position lies in its own window and, windows overlapping by half, the one before
        w = found[:, 0] // STEP_CHARS - shift
        keep = (w >= 0) & (w < windows) & (found[:, 0] < w * STEP_CHARS + WINDOW_CHARS)
        np.add.at(tf, (w[keep], found[keep, 1]), 1.0)
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (windows - df + 0.5) / (df + 0.5))
    scores = (idf * tf * (_K1 + 1) / (tf + _K1)).sum(axis=1)
    out: list[Passage] = []
    taken: list[tuple[int, int]] = []
    for w in np.argsort(-scores, kind="stable")[: top * 4]:
        if scores[w] <= 0 or len(out) >= top:
            break
        a, b = int(w) * STEP_CHARS, min(int(w) * STEP_CHARS + WINDOW_CHARS, len(text))
        if any(a < y and x < b for x, y in taken):
            continue
        taken.append((a, b))
        out.append(_passage(text, data, a, b, tokens, lines, float(scores[w]), max_tokens))
    return out


def _passage(
    text: str,
    data: bytes,
    a: int,
    b: int,
    tokens: TokenIndex,
    lines: LineIndex,
    score: float,
    max_tokens: int,
) -> Passage:
    # Whole lines where the lines are short: start at the line that holds `a`, end at a line break near `b`.
    start = text.rfind("\n", max(a - 200, 0), a) + 1 or a
    if start == 0 and a > 200:
        start = a
    stop = text.find("\n", b - 1, b + 200)
    end = stop + 1 if stop != -1 else b
    first, last = (int(x) for x in chars_to_bytes(text, data, np.asarray([start, end], dtype=np.int64)))
    offset = tokens.token_at(first)
    cap = int(tokens.offsets[min(offset + max_tokens, tokens.tokens)])
    if last > cap:
        cut = data.rfind(b"\n", first, cap)
        last = cut + 1 if cut > first + (cap - first) // 2 else max(cap, first + 1)
        while last < len(data) and (data[last] & 0xC0) == 0x80:
            last += 1  # never inside a character
    return Passage(
        text=data[first:last].decode("utf-8"),
        line=lines.line_at(first),
        end_line=lines.line_at(max(last - 1, first)),
        offset=offset,
        score=round(math.fsum([score]), 3),
        start=first,
        end=last,
    )
