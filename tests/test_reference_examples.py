"""docs/references.md shows each kind's reference as offprompt writes it.

Every block between `<!-- reference: PATH as TOOL -->` and `<!-- /reference -->` is the reference a model gets
when PATH is stored as TOOL's output, with its namespace written NAMESPACE. When the outline or the reference
changes, `python -m tests.test_reference_examples` writes the blocks again (and the diff shows what a model now
reads).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import mcp_types as mt

from offprompt.artifacts import from_block
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "references.md"
BLOCK = re.compile(r"(<!-- reference: (\S+) as (\S+) -->\n```text\n)(.*?)(```\n<!-- /reference -->)", re.S)


def reference(memory: TaskMemory, path: str, tool: str) -> str:
    """The reference's text, as the model reads it, of the file at `path` stored as `tool`'s output."""
    text = (REPO / path).read_text(encoding="utf-8")
    stored = memory.store([from_block(mt.TextContent(text=text))], tool=tool, outline_tokens=400)
    blocks = stored.to_result().content
    shown = "\n".join(block.text for block in blocks if isinstance(block, mt.TextContent))
    shown = shown.replace(stored.namespace, "NAMESPACE")
    return re.sub(r'memory_name "[^"]*"', 'memory_name "default"', shown) + "\n"


def written(memory: TaskMemory, page: str) -> str:
    """`page` with every reference block written as offprompt writes it now."""
    return BLOCK.sub(lambda m: m[1] + reference(memory, m[2], m[3]) + m[5], page)


def test_the_page_shows_each_kinds_reference_as_it_is(memory: TaskMemory) -> None:
    page = PAGE.read_text(encoding="utf-8")
    examples = BLOCK.findall(page)
    assert len(examples) >= 10, "the page shows a reference of every kind"
    for _, path, tool, shown, _ in examples:
        assert shown == reference(memory, path, tool), f"{path}: run python -m tests.test_reference_examples"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        opened = TaskMemory.open(MemorySettings(name="default", data_dir=Path(tmp)))
        try:
            PAGE.write_text(written(opened, PAGE.read_text(encoding="utf-8")), encoding="utf-8")
        finally:
            opened.close()
    sys.exit(0)
