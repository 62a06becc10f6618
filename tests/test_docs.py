"""The documentation holds together: a short README, every former README section on its page, links that resolve.

The README keeps what a newcomer needs (what offprompt is, install, the test command, one client, the tools,
the CLI) and links to `docs/` and CONTRIBUTING.md for the rest. docs/MOVED.md lists where each section of the
former README went; a section may not leave without a row there, nor the row point at a page that lacks it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench import mutation, readme_table

from .support import REPO

README = REPO / "README.md"
MOVED = REPO / "docs" / "MOVED.md"
README_MAX_LINES = 350

#: The two set-up commands: `.ci/run` runs the second, and a newcomer copies both as they are.
INSTALL = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/offprompt serve"
TEST = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && npm ci --prefix tests/peers && "
    "npm ci --prefix tests/conformance && .venv/bin/python -m pytest"
)

#: Every `##` and `###` section of the README before it was split; each must have a row in docs/MOVED.md.
FORMER_SECTIONS = (
    "Install and run",
    "What goes off the prompt",
    "What passes through",
    "Inside your own Python MCP server",
    "A map and line addresses in every reference",
    "Secrets stay out of the prompt, yet usable",
    "Pass a stored output to another tool, unread",
    "Use it from your MCP client",
    "Move your `mcpServers` block behind offprompt",
    "Claude Desktop",
    "Cursor",
    "Claude Code",
    "VS Code",
    "Command line",
    "Over HTTP",
    "Share one memory",
    "Security",
    "Debug with the MCP Inspector",
    "Run the tests",
    "How it is built",
    "Retrieval",
    "Embedding function",
    "Chroma server outages",
    "Select JSON with jq",
    "Benchmarks",
)

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")


def pages() -> list[Path]:
    return [README, REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def headings(path: Path) -> list[str]:
    return [m.group(2) for line in prose_lines(path.read_text()) if (m := HEADING.match(line))]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in headings(path):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The targets of the Markdown links outside code blocks and code spans."""
    return [m.group(1) for line in prose_lines(path.read_text()) for m in LINK.finditer(CODE_SPAN.sub("", line))]


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target} (no such heading)")
    return broken


def moved_rows() -> dict[str, list[str]]:
    """docs/MOVED.md's table: a former README section → the links of the pages that hold it."""
    rows = {}
    for line in prose_lines(MOVED.read_text()):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and not set(cells[0]) <= set("- ") and cells[1] != "now in":
            rows[cells[0]] = [m.group(1) for m in LINK.finditer(cells[1])]
    return rows


def test_the_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    assert INSTALL in text
    assert TEST in text


def test_every_former_section_has_a_row_in_moved() -> None:
    assert sorted(moved_rows()) == sorted(FORMER_SECTIONS)


@pytest.mark.parametrize("section", FORMER_SECTIONS)
def test_every_moved_section_is_a_heading_of_its_page(section: str) -> None:
    targets = moved_rows().get(section, [])
    assert targets, f"docs/MOVED.md names no page for {section!r}"
    for target in targets:
        page = (MOVED.parent / target.partition("#")[0]).resolve()
        assert page.exists(), f"{target}: no such file"
        assert section in headings(page), f"{page.relative_to(REPO)} has no heading {section!r}"


@pytest.mark.parametrize("page", pages(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n\n## A `code` heading, with commas\n")
    page = tmp_path / "here.md"
    page.write_text(
        "# Here\n\n[ok](there.md#a-code-heading-with-commas) [self](#here) [web](https://example.com/x)\n"
        "[gone](missing.md) [bad anchor](there.md#nowhere)\n\n```sh\n[in code](nope.md)\n```\n"
    )
    assert broken_links(page) == ["missing.md (no such file)", "there.md#nowhere (no such heading)"]


def test_the_bench_table_is_the_one_latest_json_gives() -> None:
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert readme_table.updated(page, REPO / "bench" / "results" / "latest.json") == page


def test_the_mutation_table_is_the_one_the_results_give() -> None:
    page = mutation.TABLE_PAGE.read_text(encoding="utf-8")
    assert mutation.with_table(page, mutation.markdown_table()) == page
