"""What `memory_query` answers as text: its passages, each named by its place, and its candidates one line each,
held to the answer's budget of tokens (`memory/shown.py` joins the passages and cuts them)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from offprompt.errors import OffpromptError
from offprompt.memory.outline import Entry
from offprompt.memory.outline.passages import terms as passage_terms
from offprompt.memory.reference import memory_token
from offprompt.memory.shown import KEPT_AROUND, LINE_CHARS, best_row, cut_to_best, within_budget
from offprompt.memory.storage.base import Hit
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens

__all__ = [
    "DEFAULT_SHOWN",
    "answer_text",
    "candidate_lines",
    "candidates",
    "cut",
    "passage_place",
    "passage_token",
    "read_against",
    "shown_text",
    "within_answer_budget",
]


#: A candidate's best line is cut to this many characters.
CANDIDATE_CHARS = 160
#: A candidate's outline title is cut to this many characters: where it is, not a second line of its text (a
#: JSON record's title can be a whole path).
TITLE_CHARS = 40
#: Candidates kept before any passage is cut to fit the budget.
KEPT_CANDIDATES = 5
#: What a mined log line shape (an outline title) writes for a field that varies.
TEMPLATE_FIELD = "<*>"


def candidates(memory: TaskMemory, hits: Sequence[Hit], queries: Sequence[str]) -> list[dict[str, Any]]:
    """Passages past top_k as one line each, for the model to choose what to load: the outline entry that holds
    it, its line range, and its line that holds most of the query's words."""
    words = passage_terms(" ".join(queries))
    outlines: dict[tuple[str, int], list[Entry]] = {}
    out = []
    for hit in hits:
        key = (hit.namespace, hit.item)
        if key not in outlines:
            try:
                outlines[key] = memory.outline(hit.namespace, hit.item)
            except OffpromptError:
                outlines[key] = []
        rows = hit.text.splitlines() or [""]
        best = best_row(rows, words)
        holding = [e for e in outlines[key] if e.line <= hit.line + best <= e.end_line]
        title = max(holding, key=lambda e: (e.depth, e.line)).title if holding else ""
        if TEMPLATE_FIELD in title:  # a log's mined line shape says nothing the candidate's own line does not
            title = ""
        out.append(
            {
                "artifact_namespace": hit.namespace,
                "item": hit.item,
                "line": hit.line,
                "end_line": hit.line + len(rows) - 1,
                "title": title,
                "text": rows[best].strip()[:CANDIDATE_CHARS],
            }
        )
    return out


def passage_place(hit: Hit, scoped: bool) -> str:
    """Where a passage is, as memory_load takes it: its line, or its offset when its text is one long line (a
    minified JSON); the namespace unless the query named it."""
    where = f"item {hit.item} line {hit.line}"
    if hit.line <= 1 and hit.offset > 0:
        where = f"item {hit.item} offset {hit.offset}"
    return where if scoped else f"artifact_namespace {hit.namespace} {where}"


def cut(text: str, chars: int) -> str:
    """`text`, or its first `chars` characters with an ellipsis in place of the last."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def candidate_lines(more: Sequence[dict[str, Any]], hits: Sequence[Hit], scoped: bool) -> str:
    """One line per candidate; a candidate whose line a passage shown or an earlier candidate already said (the
    same line of generated code, repeated) is counted, not repeated."""
    said = {row.strip() for h in hits for row in h.text.splitlines()}
    rows, repeated = [], 0
    for c in more:
        if c["text"] in said:
            repeated += 1
            continue
        said.add(c["text"])
        place = f"item {c['item']}" if scoped else f"{c['artifact_namespace']} item {c['item']}"
        title = f" {cut(c['title'], TITLE_CHARS)}" if c["title"] else ""
        rows.append(f"- {place} L{c['line']}-{c['end_line']}{title}: {c['text']}")
    if repeated:
        rows.append(f"- {repeated} more whose best line is one already shown")
    return "More candidates (load one with memory_load line=...):\n" + "\n".join(rows)


#: The passages and candidates memory_query shows by default, for which `ANSWER_TOKENS` is the budget.
DEFAULT_SHOWN = 5 + 10


def within_answer_budget(
    hits: list[Hit], more: list[dict[str, Any]], words: Collection[str], budget: int, scoped: bool
) -> tuple[list[Hit], list[dict[str, Any]]]:
    """The passages and candidates within `budget` tokens. A passage holds the answer far more often than a
    candidate's line: first the candidates past half are dropped, then the last passages cut to the lines around
    their best line, then the other candidates dropped, then the passages but the first cut to that line alone
    (a line of kilobytes to the `LINE_CHARS` around its best words), and last the first passage cut likewise."""

    def cost(shown: list[Hit]) -> int:
        return count_tokens(shown_text(shown, more, scoped))

    while len(more) > KEPT_CANDIDATES and cost(hits) > budget:
        more = more[:-1]
    hits = within_budget(hits, words, budget, cost, KEPT_AROUND)
    while more and cost(hits) > budget:
        more = more[:-1]
    hits = within_budget(hits, words, budget, cost, 0, LINE_CHARS)
    for around, chars in ((KEPT_AROUND, None), (0, LINE_CHARS)):  # a first passage joined from many hits can
        if hits and cost(hits) > budget:  # pass the budget alone
            hits[0] = cut_to_best(hits[0], words, around, chars)
    return hits, more


def read_against(memory: TaskMemory, hits: Sequence[Hit], scoped: bool, *, unless_shown: bool = True) -> str:
    """The lines each text among the passages is read against, at their places, unless a passage shows them
    already: a table's header (a row far down is a line of bare values: which is the age, which the class) and a
    test run's own summary (`=== 2 failed, 2 passed in 0.31s ===`: every question about a run is read against its
    verdict, and among hundreds of alike result lines no ranking puts that line first)."""
    out: list[str] = []
    for namespace, item in dict.fromkeys((h.namespace, h.item) for h in hits):
        try:
            made = memory.text.records(namespace, item, make=False)  # made after the reference: not waited for
        except OffpromptError:
            continue
        if made is None:
            continue
        mine = [h for h in hits if (h.namespace, h.item) == (namespace, item) and h.line > 0]
        place = f"item {item}" if scoped else f"artifact_namespace {namespace} item {item}"

        def shown(line: int, mine: list[Hit] = mine) -> bool:
            return unless_shown and any(h.line <= line < h.line + len(h.text.splitlines()) for h in mine)

        if made.header_at and mine and not shown(made.header_at):
            out.append(f"The table's header, {place} line {made.header_at}: {cut(made.header_line, LINE_CHARS)}")
        if made.totals_at and not shown(made.totals_at):
            whole = " ".join(made.totals.split()) in " ".join(made.totals_line.split())
            said = "" if whole else f" (in all: {made.totals})"
            line = made.totals_line.strip()
            out.append(f"The {made.kind}'s own summary, {place} line {made.totals_at}: {line}{said}")
    return "\n".join(out)


def answer_text(
    memory: TaskMemory, hits: list[Hit], more: list[dict[str, Any]], words: Collection[str], budget: int, scoped: bool
) -> tuple[str, list[Hit], list[dict[str, Any]]]:
    """The answer's text within `budget` tokens: the lines the texts are read against first (their cost set aside
    before the passages are cut), then the passages and candidates; and the passages and candidates shown."""
    reserved = count_tokens(read_against(memory, hits, scoped, unless_shown=False))
    hits, more = within_answer_budget(hits, more, words, budget - reserved, scoped)
    head = read_against(memory, hits, scoped)
    return "\n\n".join(filter(None, [head, shown_text(hits, more, scoped)])), hits, more


def shown_text(hits: Sequence[Hit], more: Sequence[dict[str, Any]], scoped: bool) -> str:
    """The passages, ranked, and the candidates' lines, as the answer's text shows them."""
    lines = [f"[{rank}] {passage_place(h, scoped)} (score {h.score:.2f})\n{h.text}" for rank, h in enumerate(hits, 1)]
    if more:
        lines.append(candidate_lines(more, hits, scoped))
    return "\n\n".join(lines)


def passage_token(hit: Hit) -> str:
    """The reference that passes this passage's lines on to another tool."""
    if hit.line <= 0:
        return memory_token(hit.namespace, hit.item)
    last = hit.line + hit.text.count("\n") - (1 if hit.text.endswith("\n") else 0)
    return memory_token(hit.namespace, hit.item, f"lines={hit.line}-{last}")
