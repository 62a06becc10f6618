"""The frozen retrieval questions stay exactly as their outside writers left them.

`bench/retrieval/data/frozen/` holds 111 questions written by two helper sessions that saw only their prompt
(`WRITER_PROMPT.md`) and the documents they chose, committed before any ranking change. They only report: a
ranking change is chosen on other questions. If one of these files changes, the frozen set no longer measures
what nobody here tuned on, and this test says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .support import REPO

FROZEN = REPO / "bench" / "retrieval" / "data" / "frozen"
SHA256 = {
    "WRITER_PROMPT.md": "f051027b8cd66499308fc4e01d13ba980451d1dd12d01f6d752266f619cbee93",
    "qa-a.jsonl": "9b0a5b263bd6bb1f3ab47911e602556f00fb32fd50422ac9690bd23f9d11a308",
    "qa-b.jsonl": "1abe192204f27eeae1d5a714a8c26cfae1684eb302e3bb8ad10b92fdfe00263d",
    "docs/code_configparser.py": "4a70cecccb55031a413b79e6ced2e63ca031f770cd25a4882980ecdeab67f6ff",
    "docs/code_ws_websocket.js": "5ae09f773299ad39aad65a7ae6aa6a51fd6bae1d8fe1f1255152439ae50975e8",
    "docs/json_sam_policy_templates.json": "3da6e0e839d44360b0f68d0d15f5962e709099e7b398f035a062e82c9f27ed89",
    "docs/json_scheduler_api.json": "428fbc6d766436e7b5394010e98987af0c738980ccab60d541dd5e5720e643e1",
    "docs/logs_pip_install_verbose-b.log": "949de68eab916bb5ddd8afab942bd85919deaa45a3d39c0ddc8aa37a815289c5",
    "docs/logs_pytest_jinja2-b.log": "d43ac0960419ba2d398b8023a1c7eb286a0bf6c6c54aed2917ae4fa1209f274d",
    "docs/markdown_axios_readme-b.md": "d5365d4786b490f1ec68425ddab575ca646c08e4f94834d5156dbb9653e98c37",
    "docs/markdown_node_zlib-b.md": "a9065b7722dedc3f848fb654bb430a01e879991a6f771c6bac3f77c7126b1e6e",
    "docs/prose_gpl3-b.txt": "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986",
    "docs/prose_jinja2_templates-b.rst": "dc180165969ba92e85273ba648c1626abf978ccc25eb4357ccec7d37f2bd6941",
}


def test_the_frozen_questions_and_their_documents_are_unchanged() -> None:
    changed = [
        name for name, digest in SHA256.items() if hashlib.sha256((FROZEN / name).read_bytes()).hexdigest() != digest
    ]
    assert changed == [], "the frozen eval was edited; it must stay as written (add new questions elsewhere)"
    assert sorted(p.name for p in (FROZEN / "docs").iterdir()) == sorted(n.split("/")[1] for n in SHA256 if "/" in n)


def test_every_frozen_answer_is_in_its_document_once() -> None:
    questions = [
        json.loads(line)
        for name in ("qa-a.jsonl", "qa-b.jsonl")
        for line in (FROZEN / name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(questions) == 111
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        document: bytes = (FROZEN / q["doc"]).read_bytes()
        assert document.count(q["answer"].encode("utf-8")) == 1, q["id"]
        assert Path(q["doc"]).name.startswith(q["kind"] + "_"), q["id"]
