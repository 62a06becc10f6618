"""Packing a tree of units into chunks: siblings joined up to a target, big units cut along their parts, and
what has no structure left cut into overlapping windows; every chunk within the model's limit, context included."""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field, replace

from offprompt.memory.chunking.units import (
    MAX_CONTEXT_WORDPIECES,
    MAX_DEPTH,
    MAX_TITLES_CHARS,
    RECORD_TARGET_WORDPIECES,
    WINDOW_OVERLAP,
    Node,
    WordpieceCounter,
    line_starts,
    shorten,
)


class _Measure:
    """Wordpieces of any span of a text: whole lines from one batch count, partial lines counted as asked."""

    def __init__(self, text: str, count: WordpieceCounter) -> None:
        self.text = text
        self.count = count
        self.starts = line_starts(text)
        counts = count([text[a:b] for a, b in itertools.pairwise(self.starts)])
        self.before = [0, *itertools.accumulate(counts)]  # wordpieces before each line

    def __call__(self, spans: list[tuple[int, int]]) -> list[int]:
        pieces: list[str] = []
        plans: list[tuple[int, int, int]] = []  # (piece index or -1, full-line wordpieces, piece index or -1)
        for a, b in spans:
            la = bisect.bisect_right(self.starts, a) - 1
            lb = bisect.bisect_right(self.starts, b) - 1
            if la == lb:
                plans.append((len(pieces), 0, -1))
                pieces.append(self.text[a:b])
                continue
            full_from = la if a == self.starts[la] else la + 1
            head = -1
            if full_from != la:
                head = len(pieces)
                pieces.append(self.text[a : self.starts[la + 1]])
            tail = -1
            if b != self.starts[lb]:
                tail = len(pieces)
                pieces.append(self.text[self.starts[lb] : b])
            plans.append((head, self.before[lb] - self.before[full_from], tail))
        counts = self.count(pieces)
        return [
            full + (counts[head] if head >= 0 else 0) + (counts[tail] if tail >= 0 else 0) for head, full, tail in plans
        ]


@dataclass(slots=True)
class _Piece:
    """A chunk in the making: characters ``[start, end)``, its wordpieces, and the labels above it."""

    start: int
    end: int
    size: int
    labels: tuple[str, ...]
    lead: bool = False
    target: int = 0  # how big it may grow by joining its neighbours
    titles: list[str] = field(default_factory=list)  # labels of the units packed into it
    sealed: bool = False  # under a named unit's label: joined only with pieces under the same labels


class Packer:
    """Packs sibling units into chunks, descending into any unit too big for one."""

    def __init__(self, text: str, target: int, limit: int, overlap: float) -> None:
        self.text = text
        self.target = target
        self.limit = limit
        self.overlap = overlap
        self.count = WordpieceCounter()
        self.measure = _Measure(text, self.count)
        self.pieces: list[_Piece] = []
        self.named: set[str] = set()  # labels of named units
        self._contexts: dict[tuple[str, ...], tuple[str, int]] = {}

    def context(self, labels: tuple[str, ...]) -> tuple[str, int]:
        """The context line for these labels and its wordpieces; the nearest labels are kept if all are too long."""
        found = self._contexts.get(labels)
        if found is None:
            kept = tuple(label for k, label in enumerate(labels) if label and (k == 0 or label != labels[k - 1]))
            found = ("", 0)
            while kept:
                context = " > ".join(kept)
                size = self.count([context])[0]
                if size <= MAX_CONTEXT_WORDPIECES:
                    found = (context, size)
                    break
                kept = kept[1:]
            self._contexts[labels] = found
        return found

    def pack(self, nodes: list[Node], labels: tuple[str, ...] = (), depth: int = 0) -> None:
        """Greedy runs of siblings up to the target; a unit over the limit is packed from its parts."""
        limit = max(self.limit - self.context(labels)[1], 1)
        sizes = self.measure([(n.start, n.end) for n in nodes])
        if self.overlap and len(nodes) > 2 and all(n.line for n in nodes):
            self.slide(nodes, sizes, labels, limit, min(self.target, limit))
            return
        run: _Piece | None = None
        for k, (node, size) in enumerate(zip(nodes, sizes, strict=True)):
            if node.named and node.label:
                # Its label is what a question asks it by ("the oldest commit"): the context of its chunks, which
                # the model reads, so it is packed alone under it.
                self.add(run)
                run = None
                self.named.add(node.label)
                self.pack([replace(node, label="", named=False)], (*labels, node.label), depth + 1)
                continue
            if size > limit:
                self.add(run)
                run = None
                path, parts = labels, []
                while node.expand is not None and depth < MAX_DEPTH:
                    parts, path = node.expand(), (*path, node.label)
                    if len(parts) != 1 or (parts[0].start, parts[0].end) != (node.start, node.end):
                        break
                    node, parts, depth = parts[0], [], depth + 1  # a wrapper around one member: go through it
                if parts:
                    self.pack(parts, path, depth + 1)
                else:
                    self.windows(node.start, node.end, labels, limit)
                continue
            target = min(RECORD_TARGET_WORDPIECES if node.record else self.target, limit)
            if run is not None:
                joined = run.size + size
                grown = min(run.target, target)
                small = grown // 4  # a unit this small joins a neighbour even past the target
                tail = size < small and k == len(nodes) - 1
                if joined <= grown or (joined <= limit and (run.size < small or tail)):
                    run.end, run.size, run.target = node.end, joined, grown
                    run.titles += [node.label] if node.label else []
                    continue
            self.add(run)
            run = _Piece(node.start, node.end, size, labels, node.lead, target, [node.label] if node.label else [])
        self.add(run)

    def slide(self, nodes: list[Node], sizes: list[int], labels: tuple[str, ...], limit: int, target: int) -> None:
        """Windows of lines up to the target, each sharing about ``overlap`` of itself with the next: a run of lines
        has no structure left to cut along, so no line is left only at the edge of a chunk."""
        i, n = 0, len(nodes)
        while i < n:
            if sizes[i] > limit:
                self.windows(nodes[i].start, nodes[i].end, labels, limit)
                i += 1
                continue
            j, total = i, 0
            while j < n and sizes[j] <= limit and (j == i or total + sizes[j] <= target):
                total += sizes[j]
                j += 1
            self.add(_Piece(nodes[i].start, nodes[j - 1].end, total, labels, target=target))
            if j >= n or sizes[j] > limit:
                i = j
                continue
            rest, k = total, i
            while k < j - 1 and rest > self.overlap * total:
                rest -= sizes[k]
                k += 1
            i = max(k, i + 1)

    def add(self, piece: _Piece | None) -> None:
        if piece is not None and self.text[piece.start : piece.end].strip():
            piece.sealed = any(label in self.named for label in piece.labels)
            self.pieces.append(piece)

    def windows(self, start: int, end: int, labels: tuple[str, ...], limit: int) -> None:
        """Overlapping windows of at most ``limit`` wordpieces over a unit with no structure left to cut along."""
        text = self.text
        chars_per_piece = (end - start) / max(self.count([text[start:end]])[0], 1)
        step = max(int(limit * chars_per_piece * 0.95), 1)
        pos = start
        while pos < end:
            cut = min(end, pos + step)
            while True:
                if cut < end:
                    cut = _soft_cut(text, pos, cut)
                size = self.count([text[pos:cut]])[0]
                if size <= limit or cut - pos <= 1:
                    break
                cut = pos + max(int((cut - pos) * 0.85), 1)
            self.add(_Piece(pos, cut, size, labels, target=self.target))
            if cut >= end:
                break
            back = _soft_cut(text, pos, cut - int((cut - pos) * WINDOW_OVERLAP))
            pos = back if pos < back < cut else cut

    def chunks(self) -> list[tuple[int, int, str, str]]:
        """The pieces in text order, each joined to the one before it where they touch and fit together:
        within the target, or within the limit when one is small (a closing line, a summary, a lone heading)."""
        merged: list[_Piece] = []
        for piece in sorted(self.pieces, key=lambda p: (p.start, p.end)):
            last = merged[-1] if merged else None
            if last is not None and last.end == piece.start and not piece.lead and not _apart(last, piece):
                common = common_prefix(last.labels, piece.labels)
                size = last.size + piece.size + self.context(common)[1]
                grown = min(last.target, piece.target)
                if size <= grown or (min(last.size, piece.size) < grown // 4 and size <= self.limit):
                    # Labels the joined piece no longer sits under still name what it holds.
                    titles = [*last.titles, *last.labels[len(common) :], *piece.labels[len(common) :], *piece.titles]
                    merged[-1] = _Piece(last.start, piece.end, last.size + piece.size, common, last.lead, grown, titles)
                    continue
            merged.append(piece)
        return [
            (p.start, p.end, self.context(p.labels)[0], shorten(" | ".join(dict.fromkeys(p.titles)), MAX_TITLES_CHARS))
            for p in merged
        ]


def _apart(last: _Piece, piece: _Piece) -> bool:
    """Whether a named unit's piece and its neighbour stay apart: joined, its label would no longer be context."""
    return (last.sealed or piece.sealed) and last.labels != piece.labels


#: Up to the last white space, or the last character that is not a letter or digit, of what they are matched on.
_TO_LAST_SPACE = re.compile(r".*\s", re.DOTALL)
_TO_LAST_MARK = re.compile(r".*[\W_]", re.DOTALL)


def _soft_cut(text: str, start: int, cut: int) -> int:
    """``cut`` moved back to just after whitespace or punctuation, if there is some in the last quarter (one
    regex scan each: a window over a line with neither is looked at in C, not a character at a time)."""
    floor = start + (cut - start) * 3 // 4
    found = _TO_LAST_SPACE.match(text, floor, cut) or _TO_LAST_MARK.match(text, floor, cut)
    return found.end() if found is not None and found.end() > floor else cut


def common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
