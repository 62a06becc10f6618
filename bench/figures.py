"""Tables of measured figures, generated between markers from committed result files.

    python -m bench.figures            # rewrite every figures table of README.md, CONTRIBUTING.md, docs/, docs/dev/
    python -m bench.figures --check    # exit 1 if a table is not the one its file gives, or names no file;
                                       # list (without failing) the files whose measured code changed since

A table sits between two markers, each on a line of its own:

    <!-- figures: bench/results/FILE.json [selector] -->
    <!-- /figures -->

and is never edited by hand: the generator writes the table and, under it, a line naming the file, the commit
the run was at, the load average and the command that made it. Prose refers to the table and does not
restate its figures (limits and settings are not figures).

The selector is shell-quoted words:

- a results file of `python -m bench` (one with `sections`): `section=NAME` (repeatable; default every
  section) and `row=TEXT` (repeatable: the rows whose metric is TEXT, or else contains it; default every
  row), in the file's order;
- any other JSON: `at=PATH` (dotted keys to a mapping or list of records; default the whole file),
  `row=TEXT` (the records whose key is TEXT, or else contains it), `col=PATH` (repeatable: a cell per
  record; default its scalar fields) and `label=HEADER` (the key column's header). `row` and `col` take
  `... as NAME` to show another name; a `col` path may be `A|B` (the first that the record has) or `A + B`
  (both, as `A / B`).

A `row` that selects nothing is an error, so a renamed metric fails the check instead of dropping a row. A
marker inside a fenced code block is an example, not a marker.

The word `as-run` marks a table that is the record of one run on purpose (a question set or a fresh
repository set run once, before it was spent): the check does not list its file as stale when the code it
measured changes, but lists it apart, with the commit of its run, as kept as run.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.measured import Sources
from bench.report import STATUS_MARK, Row, SectionResult, sections_from_json

REPO = Path(__file__).resolve().parent.parent
OPEN = re.compile(r"^<!-- figures: (?P<file>\S+)(?P<selector>[^\n]*?) -->$", re.M)
CLOSE = "<!-- /figures -->"
FENCE = re.compile(r"^\s*(```|~~~)")


class FigureError(ValueError):
    """A marker the generator cannot fill: no such file, or a selector that selects nothing."""


class StaleFigures(UserWarning):
    """Tables made from runs whose measured code changed since: shown, never a failure (tests/test_docs.py)."""


@dataclass(frozen=True, slots=True)
class Block:
    """One marker pair of a page: the file it names, its selector, and where its body lies in the page."""

    file: str
    selector: str
    start: int  # the body: from the end of the opening marker's line ...
    end: int  # ... to the start of the closing marker


def pages(root: Path = REPO) -> list[Path]:
    docs = root / "docs"
    return [root / "README.md", root / "CONTRIBUTING.md", *sorted(docs.glob("*.md")), *sorted(docs.glob("dev/*.md"))]


def _fenced(text: str) -> list[tuple[int, int]]:
    """The spans of fenced code blocks: a marker shown as an example there is no marker."""
    spans, start, offset = [], -1, 0
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            if start < 0:
                start = offset
            else:
                spans.append((start, offset + len(line)))
                start = -1
        offset += len(line)
    return spans


def blocks(text: str) -> Iterator[Block]:
    """The marker pairs of a page; FigureError for an opening marker with no closing one after it."""
    fenced = _fenced(text)
    opening = [m for m in OPEN.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]
    for i, found in enumerate(opening):
        end = text.find(CLOSE, found.end())
        if end < 0 or (i + 1 < len(opening) and opening[i + 1].start() < end):
            raise FigureError(f"{found.group(0)} has no {CLOSE} after it")
        yield Block(found["file"], found["selector"].strip(), found.end(), end)


def _named_by(block: Block) -> str:
    """A marker as a problem names it: its file and selector."""
    return f"{block.file} {block.selector}" if block.selector else block.file


# --- the selector ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Selector:
    sections: list[str]
    rows: list[tuple[str, str | None]]  # (text the name is or contains, the name to show instead)
    at: str
    cols: list[tuple[str, str | None]]  # (path, header)
    label: str
    as_run: bool = False  # the record of one run, kept as it ran: never stale


def _named(value: str) -> tuple[str, str | None]:
    """`TEXT as NAME` → (TEXT, NAME); `TEXT` → (TEXT, None)."""
    text, sep, name = value.partition(" as ")
    return (text.strip(), name.strip()) if sep else (text.strip(), None)


def parse_selector(selector: str) -> Selector:
    parsed = Selector([], [], "", [], "")
    for word in shlex.split(selector):
        if word == "as-run":
            parsed.as_run = True
            continue
        key, sep, value = word.partition("=")
        if not sep or key not in {"section", "row", "at", "col", "label"}:
            raise FigureError(f"selector word {word!r}: use section=, row=, at=, col=, label= or as-run")
        if key == "section":
            parsed.sections.append(value)
        elif key == "row":
            parsed.rows.append(_named(value))
        elif key == "col":
            parsed.cols.append(_named(value))
        elif key == "at":
            parsed.at = value
        else:
            parsed.label = value
    return parsed


def _picked(names: list[str], wanted: list[tuple[str, str | None]]) -> list[tuple[int, str]]:
    """The (index, shown name) of the names `row=` words select, in the file's order. A word selects the name
    equal to it if there is one ("map", not "no_map"), else every name containing it; each must select one."""
    if not wanted:
        return list(enumerate(names))
    chosen: dict[int, str] = {}
    for text, rename in wanted:
        exact = [i for i, name in enumerate(names) if name == text]
        hits = exact or [i for i, name in enumerate(names) if text in name]
        if not hits:
            raise FigureError(f"row={text!r} selects nothing")
        for i in hits:
            chosen.setdefault(i, rename or names[i])
    return sorted(chosen.items())


# --- cells -------------------------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """A JSON value as a table shows it: numbers as the bench's own table rounds them."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {cell(v)}" for k, v in value.items())
    return Row("", value).shown().replace("|", "\\|")


def lookup(node: Any, path: str) -> Any:
    """The value at a dotted path, or KeyError; `A|B` is the first of A, B that exists."""
    for option in path.split("|"):
        value = node
        try:
            for key in option.strip().split("."):
                value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            continue
        return value
    raise KeyError(path)


def column(record: Any, path: str) -> str:
    """A record's cell: `A + B` shows both values as `A / B`; a missing value shows as —."""
    shown = []
    for part in path.split(" + "):
        try:
            shown.append(cell(lookup(record, part)))
        except KeyError:
            shown.append("—")
    return " / ".join(shown)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = [header, align, *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


# --- results of `python -m bench` --------------------------------------------------------------------------


def bench_table(doc: dict[str, Any], selector: Selector) -> str:
    """The rows of a `python -m bench` results file: a section column only when the table spans several."""
    found = {s.name: s for s in sections_from_json(doc)}
    missing = [name for name in selector.sections if name not in found]
    if missing:
        raise FigureError(f"no section {', '.join(missing)} (the file has {', '.join(found)})")
    chosen = [found[name] for name in selector.sections] or list(found.values())
    if selector.cols or selector.at or selector.label:
        raise FigureError("a bench results file takes section= and row= only")
    flat = [(s, r) for s in chosen for r in s.rows]
    picked = _picked([r.metric for _, r in flat], selector.rows)
    several = len({flat[i][0].name for i, _ in picked}) > 1
    rows = []
    for i, name in picked:
        section, row = flat[i]
        note = f" ({row.note})" if row.note else ""
        cells = [f"{name}{note}", row.shown(), row.target, STATUS_MARK[row.status]]
        rows.append([section.title, *cells] if several else cells)
    header = ["section"] * several + ["metric", "value", "target", ""]
    table = _table(header, rows, {len(header) - 3})
    return "\n\n".join([table, *_notes(chosen, several)])


def _notes(sections: list[SectionResult], titled: bool) -> list[str]:
    notes = [f"- {s.title}: {n}" if titled else f"- {n}" for s in sections for n in s.notes]
    return ["\n".join(notes)] if notes else []


# --- any other results file --------------------------------------------------------------------------------


def _records(node: Any) -> list[tuple[str, Any]]:
    """(key, record) of a mapping's mapping values, or ("", record) of a list's mappings."""
    if isinstance(node, dict):
        return [(str(k), v) for k, v in node.items() if isinstance(v, dict)]
    if isinstance(node, list):
        return [("", v) for v in node if isinstance(v, dict)]
    raise FigureError("at= names neither a mapping nor a list of records")


def records_table(doc: Any, selector: Selector) -> tuple[str, list[Any]]:
    """The table, and the records it shows (a stamp may be in the one record shown)."""
    if selector.sections:
        raise FigureError("section= is for results of python -m bench")
    try:
        node = lookup(doc, selector.at) if selector.at else doc
    except KeyError:
        raise FigureError(f"at={selector.at!r}: no such key") from None
    records = _records(node)
    keyed = any(key for key, _ in records)
    names = [key if keyed else column(record, next(iter(record), "")) for key, record in records]
    picked = _picked(names, selector.rows)
    if not picked:
        raise FigureError("no records to show")
    cols = selector.cols or [(k, None) for k, v in records[picked[0][0]][1].items() if not isinstance(v, dict)]
    rows = [[name] * keyed + [column(records[i][1], path) for path, _ in cols] for i, name in picked]
    header = [selector.label] * keyed + [shown or path for path, shown in cols]
    numeric = {j for j in range(len(header)) if all(_numeric(r[j]) for r in rows)}
    return _table(header, rows, numeric), [records[i][1] for i, _ in picked]


def _numeric(text: str) -> bool:
    return bool(re.fullmatch(r"-?[\d,.]+( / -?[\d,.]+)*( \S+)?|—", text))


# --- the stamp ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stamp:
    command: str | None
    commit: str | None  # as stamped: a short or full hash, `+dirty` when the tree had changes
    load_start: list[float] | None
    load_end: list[float] | None
    finished: str | None
    machine: str | None


def _first(sources: list[Mapping[str, Any]], key: str) -> Any:
    return next((s[key] for s in sources if s.get(key) is not None), None)


def stamp_of(doc: Any, shown: list[Any] | None = None) -> Stamp:
    """What a file says of its run: at its top, in `machine`, in `git` (the retrieval eval's), or in the one
    record a table shows (trace_call.json keeps a command per label)."""
    if not isinstance(doc, dict):
        return Stamp(None, None, None, None, None, None)
    sources: list[Mapping[str, Any]] = [doc]
    for key in ("machine", "git"):
        if isinstance(doc.get(key), dict):
            sources.append(doc[key])
    if shown and len(shown) == 1 and isinstance(shown[0], dict):
        sources.append(shown[0])
    commit = _first(sources, "commit")
    if isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit):
        commit = commit[:7] + ("+dirty" if _first(sources, "uncommitted") else "")
    machine = doc["machine"] if isinstance(doc.get("machine"), dict) else {}
    cores = f"{machine['cores']} cores ({machine.get('cpu', '?')})" if "cores" in machine else None
    return Stamp(
        _first(sources, "command"),
        commit,
        _first(sources, "load_average_at_start"),
        _first(sources, "load_average_at_end"),
        _first(sources, "finished"),
        cores,
    )


def _load(values: list[float] | None) -> str:
    return ", ".join(f"{v:g}" for v in values) if values else "not recorded"


def stamp_line(file: str, stamp: Stamp) -> str:
    run = f"`{stamp.command}`" if stamp.command else "not recorded"
    at = stamp.commit or "not recorded"
    where = f", on {stamp.machine}" if stamp.machine else ""
    finished = f", finished {stamp.finished}" if stamp.finished else ""
    load = f"load average (1, 5, 15 min) {_load(stamp.load_start)} at the start, {_load(stamp.load_end)} at the end"
    if not stamp.load_start and not stamp.load_end:
        load = "load average not recorded"
    return f"Generated by `python -m bench.figures` from `{file}`: command {run}, commit {at}{where}{finished}; {load}."


# --- pages -------------------------------------------------------------------------------------------------


def render(root: Path, file: str, selector: str) -> str:
    """The body a marker pair holds: the table, the file's notes if any, and the stamp line."""
    path = root / file
    if not path.is_file():
        raise FigureError(f"{file}: no such file")
    doc = json.loads(path.read_text(encoding="utf-8"))
    chosen = parse_selector(selector)
    if isinstance(doc, dict) and isinstance(doc.get("sections"), dict):
        table, shown = bench_table(doc, chosen), None
    else:
        table, shown = records_table(doc, chosen)
    return f"\n\n{table}\n\n{stamp_line(file, stamp_of(doc, shown))}\n\n"


def regenerated(text: str, root: Path = REPO) -> tuple[str, list[str]]:
    """`text` with every figures table rewritten from its file, and what could not be (the old body kept)."""
    out, problems, done = [], [], 0
    try:
        found = list(blocks(text))
    except FigureError as exc:
        return text, [str(exc)]
    for block in found:
        try:
            body = render(root, block.file, block.selector)
        except (FigureError, json.JSONDecodeError) as exc:
            problems.append(f"{_named_by(block)}: {exc}")
            body = text[block.start : block.end]
        out += [text[done : block.start], body]
        done = block.end
    return "".join(out) + text[done:], problems


def check_page(text: str, root: Path = REPO) -> list[str]:
    """Why a page's figures tables are not the ones their files give: one line per table."""
    new, problems = regenerated(text, root)
    if new != text:  # a table that could not be made keeps its body, so it differs from nothing
        for a, b in zip(blocks(text), blocks(new), strict=True):
            if text[a.start : a.end] != new[b.start : b.end]:
                problems.append(f"the table of {_named_by(a)} differs from its file")
    return problems


def named_files(root: Path = REPO, *, as_run: bool | None = None) -> list[str]:
    """Every results file a marker names, once each, in page order; with `as_run`, only the files every marker
    naming them marks `as-run` (True) or the others (False)."""
    names: dict[str, bool] = {}
    for page in pages(root):
        try:
            for block in blocks(page.read_text(encoding="utf-8")):
                kept = _as_run(block.selector)
                names[block.file] = names.get(block.file, True) and kept
        except (OSError, FigureError):  # the check reports those
            continue
    return [name for name, kept in names.items() if as_run is None or kept == as_run]


def _as_run(selector: str) -> bool:
    try:
        return parse_selector(selector).as_run
    except (FigureError, ValueError):  # the check reports it
        return False


# --- staleness ---------------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


#: What a stamp with no readable command is compared on: the code, not a run's file, this generator or prose.
CODE = ["--", "server", "bench", *(f":(exclude){p}" for p in ("bench/results", "bench/figures.py", "bench/**/*.md"))]


@dataclass(slots=True)
class Staleness:
    """One check's view of the repository: sources parsed and diffs taken once for every file it judges."""

    root: Path = REPO
    sources: Sources | None = None
    _changed: dict[str, list[str] | None] = field(default_factory=dict)

    def changed(self, commit: str) -> list[str] | None:
        """The files that differ between a commit and HEAD; None when this clone does not have the commit."""
        if commit not in self._changed:
            known = _git(self.root, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
            diff = _git(self.root, "diff", "--name-only", "--no-renames", commit, "HEAD") if known else None
            self._changed[commit] = diff.stdout.split() if diff else None
        return self._changed[commit]

    def why(self, commit: str, command: str | None) -> str | None:
        """Why figures a command measured at `commit` may not be HEAD's, or None."""
        base, dirty = commit.removesuffix("+dirty"), commit.endswith("+dirty")
        changed = self.changed(base)
        if changed is None:
            return f"stamped {commit}, a commit this clone does not have"
        self.sources = self.sources or Sources(self.root)
        measured = self.sources.measured(command) if command else None
        if measured is None:
            if _git(self.root, "diff", "--quiet", base, "HEAD", *CODE).returncode != 0:
                said = "no command stamped" if not command else f"`{command}` runs no Python module this can read"
                return f"stamped {commit}: {said}, and server/ or bench/ differ at HEAD"
        elif first := measured.first_changed(changed):
            path, reason, count = first
            more = f"; {count - 1} more changed files it measures" if count > 1 else ""
            return f"stamped {commit}: {path} changed ({reason}{more})"
        return f"stamped {commit}: its tree had uncommitted changes" if dirty else None


def staleness(file: str, root: Path = REPO, check: Staleness | None = None) -> str | None:
    """Why a file's figures may not be HEAD's: a file it measures changed since the commit it was stamped with
    (`bench/measured.py` says which files those are), or its tree was dirty; None when they are HEAD's."""
    path = root / file
    if not path.is_file():
        return None
    measured = runs_of(json.loads(path.read_text(encoding="utf-8")))
    if not measured:
        return "no commit stamped"
    check = check or Staleness(root)
    return next(filter(None, (check.why(commit, command) for commit, command in measured)), None)


def runs_of(doc: Any) -> list[tuple[str, str | None]]:
    """The (commit, command) of a file's runs: its own stamp's, or else each of its records' (a file that keeps
    one run per label, as trace_call.json does)."""
    stamp = stamp_of(doc)
    if stamp.commit:
        return [(stamp.commit, stamp.command)]
    records = doc.values() if isinstance(doc, dict) else []
    found = {
        (r["commit"], r.get("command")) for r in records if isinstance(r, dict) and isinstance(r.get("commit"), str)
    }
    return sorted(found, key=lambda run: (run[0], run[1] or ""))


def stale(root: Path = REPO) -> list[str]:
    """`FILE: why` for each results file a table is made from that may be stale, by file name (a file only
    `as-run` tables read is a record of its run, never stale)."""
    check = Staleness(root)
    files = sorted(named_files(root, as_run=False))
    return [f"{file}: {why}" for file in files if (why := staleness(file, root, check))]


def kept_as_run(root: Path = REPO) -> list[str]:
    """`FILE: run at COMMIT` for each results file only `as-run` tables read."""
    found = []
    for file in sorted(named_files(root, as_run=True)):
        path = root / file
        runs = runs_of(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else []
        found.append(f"{file}: run at {', '.join(commit for commit, _ in runs) or 'no commit stamped'}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check; rewrite nothing")
    args = parser.parse_args()
    failed = False
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if args.check:
            problems = check_page(text)
        else:
            new, problems = regenerated(text)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"{page.relative_to(REPO)}: rewritten")
        for problem in problems:
            print(f"{page.relative_to(REPO)}: {problem}", file=sys.stderr)
        failed = failed or bool(problems)
    if args.check and (listed := stale()):
        print("figures that may be stale (listed, not a failure):", *listed, sep="\n  ")
    if args.check and (kept := kept_as_run()):
        print("figures kept as their run (as-run tables):", *kept, sep="\n  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
