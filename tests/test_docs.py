"""The documentation holds together: a short README, links that resolve, tables that are their files'.

The README keeps what a newcomer needs (what offprompt is, install, the test command, one client, the tools,
the CLI) and links to `docs/` (for users), `docs/dev/` (for contributors) and CONTRIBUTING.md for the rest.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from bench import figures, mutation

from .support import REPO

README = REPO / "README.md"
README_MAX_LINES = 350

#: The two set-up commands: `.ci/run` runs the second, and a newcomer copies both as they are.
INSTALL = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/offprompt serve"
TEST = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && npm ci --prefix tests/peers && "
    "npm ci --prefix tests/conformance && .venv/bin/python -m pytest -n 2"
)

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")


def pages() -> list[Path]:
    return figures.pages(REPO)


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


def test_the_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    assert INSTALL in text
    assert TEST in text


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


def test_every_figures_table_is_the_one_its_file_gives() -> None:
    """`python -m bench.figures --check`: a hand-edited figure, a marker naming no file, or a row its file no
    longer has fails here (`python -m bench.figures` rewrites the tables)."""
    problems = [
        f"{page.relative_to(REPO)}: {problem}"
        for page in figures.pages()
        for problem in figures.check_page(page.read_text(encoding="utf-8"))
    ]
    assert problems == []


@pytest.mark.filterwarnings("default::bench.figures.StaleFigures")
def test_figures_measured_on_other_code_are_listed_without_failing() -> None:
    """Figures whose measured code changed since their run may be stale (tests/test_figures.py): a warning in
    pytest's summary, so later work is not blocked by them."""
    listed = figures.stale()
    if listed:
        warnings.warn(figures.StaleFigures("figures that may be stale:\n  " + "\n  ".join(listed)), stacklevel=1)


def test_a_hand_edited_figure_a_missing_file_and_a_lost_row_are_caught(tmp_path: Path) -> None:
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    row = {"metric": "store, p50", "value": 1.5, "unit": "ms", "target": "", "status": "info", "note": ""}
    section = {"title": "2. Store", "seconds": 1, "error": None, "rows": [row], "notes": [], "data": {}}
    stamped = {"command": "python -m bench --only store", "commit": "abc1234", "machine": {}}
    (results / "run.json").write_text(json.dumps({**stamped, "sections": {"store": section}}))
    marker = "<!-- figures: bench/results/run.json row=store -->\n<!-- /figures -->\n"
    page, problems = figures.regenerated(f"# Page\n\n{marker}", tmp_path)
    assert problems == []
    assert "| store, p50 | 1.5 ms |" in page
    assert "`python -m bench --only store`, commit abc1234" in page
    assert "load average not recorded" in page
    assert figures.check_page(page, tmp_path) == []
    edited = page.replace("| 1.5 ms |", "| 1.4 ms |")
    assert figures.check_page(edited, tmp_path) == [
        "the table of bench/results/run.json row=store differs from its file"
    ]
    missing = page.replace("run.json", "gone.json")
    assert figures.check_page(missing, tmp_path) == [
        "bench/results/gone.json row=store: bench/results/gone.json: no such file"
    ]
    renamed = page.replace("row=store", 'row="read back"')
    assert figures.check_page(renamed, tmp_path) == [
        "bench/results/run.json row=\"read back\": row='read back' selects nothing"
    ]
    unclosed = f"{marker.splitlines()[0]}\n"
    assert "has no <!-- /figures --> after it" in figures.check_page(unclosed, tmp_path)[0]
    shown = f"```md\n{marker.splitlines()[0]}\n```\n"  # an example in a code block is no marker
    assert figures.check_page(shown, tmp_path) == []


def test_a_records_table_picks_rows_and_columns(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"rows": {"map": {"a": {"b": 0.8561}, "n": 3}, "no_map": {"n": 1}}}))
    selector = 'at=rows row="map as with the map" row=no_map col="a.b|n as first" col="n + n as twice" label=run'
    body = figures.render(tmp_path, "r.json", selector)
    assert (
        "| run | first | twice |\n| --- | ---: | ---: |\n| with the map | 0.856 | 3 / 3 |\n| no_map | 1 | 1 / 1 |"
        in body
    )
    assert "command not recorded, commit not recorded; load average not recorded" in body


def test_the_mutation_table_is_the_one_the_results_give() -> None:
    page = mutation.TABLE_PAGE.read_text(encoding="utf-8")
    assert mutation.with_table(page, mutation.markdown_table()) == page


#: What bench/results may hold at most: summaries a table reads, not every hit of a run.
RESULTS_MAX_BYTES = 1_000_000


def test_bench_results_holds_what_the_tables_read_and_stays_small() -> None:
    """One current file per docs table (the mutation table's before and after, the growth plot its table names):
    an earlier run or a file no table reads is in git history, and a run's every hit goes to bench/listings/."""
    results = REPO / "bench" / "results"
    read = {REPO / name for name in figures.named_files()}
    read |= {mutation.RESULTS / f"mutation-{label}.json" for label in ("before", "after")}
    read.add(results / "growth.png")  # the benchmark table's growth section names it
    files = {path for path in results.iterdir() if path.is_file()}
    assert sorted(path.name for path in files - read) == []
    total = sum(path.stat().st_size for path in files)
    assert total <= RESULTS_MAX_BYTES, f"bench/results holds {total:,} bytes"


def test_a_file_of_labelled_runs_is_judged_by_each_runs_commit() -> None:
    """trace_call.json keeps a run per label, each stamped: the check lists it as stale by those, not as a file
    with no commit."""
    runs = {
        "fresh": {"commit": "abc1234", "command": "python -m bench.trace_call", "total": 1},
        "warm": {"commit": "def5678"},
        "other tree": {"commit": None},
    }
    assert figures.runs_of(runs) == [("abc1234", "python -m bench.trace_call"), ("def5678", None)]
    assert figures.runs_of({"commit": "abc1234", "fresh": {"commit": "def5678"}}) == [("abc1234", None)]


def _parser_flags() -> dict[str, set[str]]:
    """Every subcommand (`memory ls` too) and the long flags it takes."""
    import argparse

    from offprompt.cli import _parser

    def flags(parser: argparse.ArgumentParser) -> set[str]:
        return {o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(found[0].choices) if found else {}

    out: dict[str, set[str]] = {}
    for name, command in subcommands(_parser()).items():
        verbs = subcommands(command)
        if name != "memory":
            out[name] = flags(command)
        out.update({f"{name} {verb}": flags(sub) for verb, sub in verbs.items()})
    return out


def test_each_commands_flags_are_the_ones_the_command_line_page_lists() -> None:
    """README.md once said every command takes --memory-name, --data-dir, --config and --json, while `check
    --memory-name`, `init --json` and `index --data-dir` were refused: the page's table is checked both ways."""
    text = (REPO / "docs" / "cli.md").read_text()
    table = text.split("## Flags", 1)[1].split("\n## ", 1)[0]
    accepted = _parser_flags()
    listed: set[str] = set()
    for row in re.findall(r"^\| (`.+?) \| (.+) \|$", table, re.M):
        commands = re.findall(r"`([a-z ]+)`", row[0])
        flags = set(re.findall(r"`(--[a-z-]+)`", row[1]))
        listed.update(commands)
        for command in commands:
            assert accepted[command] <= flags, (command, accepted[command] - flags)
        for flag in flags:
            assert any(flag in accepted[command] for command in commands), (commands, flag)
    assert listed == set(accepted)
