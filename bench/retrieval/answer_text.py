"""What `memory_query`'s default answer shows a model, per question: its text's tokens (o200k_base), and whether
that text holds the answer.

The rule is the strict one, read on the text the model gets rather than on the ranked chunks: the answer's
non-blank lines, each with its edge whitespace left out, appear in that order in consecutive non-blank lines of
the answer's text (a passage, or a candidate's one line; an answer may begin or end inside a line). The ranks in
eval.py say where the chunk holding the answer ranked; this says whether the answer, as shown and within its
budget of tokens, holds it.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from typing import Any

from offprompt import tools
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens
from offprompt.tool_args import QueryArgs


def holds(answer: str, text: str) -> bool:
    """Whether `text` shows `answer`'s non-blank lines, stripped, in order and consecutive (blank lines aside)."""
    wanted = "\n".join(line.strip() for line in answer.splitlines() if line.strip())
    shown = "\n".join(line.strip() for line in text.splitlines() if line.strip())
    return bool(wanted) and wanted in shown


def ask(memory: TaskMemory, namespace: str, question: str, answer: str) -> dict[str, Any]:
    """`memory_query` within the document, with its default arguments, as the tool answers a model."""
    found = asyncio.run(tools.memory_query(memory, QueryArgs(query=question, artifact_namespace=namespace), None))
    text = "\n".join(block.text for block in found.content if block.type == "text")
    return {"tokens": count_tokens(text), "holds": holds(answer, text)}


def by_group(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind and over all: the share of answers whose text holds the answer, and the text's tokens."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in answers:
        if "document/answer-text" in a:
            for group in ("all", a["kind"]):
                groups[group].append(a["document/answer-text"])
    out: dict[str, Any] = {}
    for group, rows in sorted(groups.items()):
        tokens = sorted(r["tokens"] for r in rows)
        out[group] = {
            "questions": len(rows),
            "holds": round(sum(r["holds"] for r in rows) / len(rows), 3),
            "tokens_p50": round(statistics.median(tokens)),
            "tokens_p90": tokens[max(0, -(-9 * len(tokens) // 10) - 1)],
            "tokens_max": tokens[-1],
        }
    return out
