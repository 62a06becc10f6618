"""The outputs and questions of the tokens-to-answer comparison with peer systems (`python -m bench.answer_peers`)
stay as they were fixed before its first run, and every question can be answered from its output."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bench.answer_peers.outputs import QUESTIONS, answered, load_questions, write_outputs

SHA256 = "1d70fbe3e2a2c5eaf02b609acf4a0f28d4091936839e0b988a711d6c636d43e0"


def test_the_questions_are_the_ones_fixed_before_the_first_run() -> None:
    assert hashlib.sha256(QUESTIONS.read_bytes()).hexdigest() == SHA256, (
        f"{QUESTIONS} changed: the comparison no longer measures questions fixed before any system ran on them"
    )


def test_every_question_s_evidence_is_in_its_output_and_a_window_of_a_line_still_shows_it(tmp_path: Path) -> None:
    """The ~1 MB source file is made from the pinned kubernetes release and checked by its SHA-256; an evidence
    string is found in the output as written, and in a window cut from the middle of a long line with its
    whitespace changed (what a search snippet or a decoded JSON value shows)."""
    written = write_outputs(tmp_path)
    assert sorted(p.name for p in written) == sorted({q.doc for q in load_questions()})
    for q in load_questions():
        text = (tmp_path / q.doc).read_text(encoding="utf-8")
        assert answered(q.evidence, text), q.id
        first = q.evidence[0]
        at = text.index(first)
        window = text[max(at - 40, 0) : at + len(first) + 40].replace(" ", "\n  ")
        assert answered((first,), window), q.id
        cut = text[max(at - 40, 0) : at + len(first) - 1]  # one character short of it
        assert not answered((first,), cut), q.id
