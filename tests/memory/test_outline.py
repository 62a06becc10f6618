"""The outline of real stored texts: every entry names what starts on its line, for each kind of text, and
its token offset points exactly there, also where the whole text is one line."""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

from offprompt.memory import outline
from offprompt.memory.outline import Entry, view
from offprompt.tokens import TokenIndex, index_tokens

from ..support import DOCS, REPO

LICENSES = REPO / "bench" / "retrieval" / "data" / "licenses"
READMES = REPO / "tests" / "data" / "readmes"


def build(text: str, kind: str = "text", hint: str = "") -> tuple[list[Entry], TokenIndex]:
    data = text.encode()
    tokens = index_tokens(data)
    return outline.build(data, kind, hint, tokens), tokens


def named(entries: list[Entry], prefix: str) -> Entry:
    return next(e for e in entries if e.title.startswith(prefix))


def line_of(lines: list[str], exact: str) -> int:
    return lines.index(exact) + 1


def starts_at(tokens: TokenIndex, entry: Entry, byte: int) -> bool:
    """The entry's token is the one that holds `byte`: a window from it starts with the entry."""
    return int(tokens.offsets[entry.offset]) <= byte < int(tokens.offsets[entry.offset + 1])


def test_python_code_lists_classes_functions_and_methods_on_their_lines() -> None:
    text = (DOCS / "code_subprocess.py").read_text()
    lines = text.split("\n")
    entries, tokens = build(text, hint="subprocess.py")
    for e in entries:  # every title is the line it points at (its signature), plus a docstring's first sentence
        signature = e.title.split(" — ")[0]
        assert " ".join(lines[e.line - 1].split()).startswith(signature), e
        assert starts_at(tokens, e, len("\n".join(lines[: e.line - 1]).encode()) + (e.line > 1))
    timeout = named(entries, "class TimeoutExpired(SubprocessError):")
    assert timeout.line == line_of(lines, "class TimeoutExpired(SubprocessError):")
    assert timeout.kind == "class"
    assert timeout.depth == 0
    assert "This exception is raised when the timeout expires" in timeout.title
    assert lines[timeout.end_line - 1].strip()  # ends on its last line, not on the blank lines after it
    assert not lines[timeout.end_line].startswith(" ")  # and nothing of its body follows
    communicate = named(entries, "def communicate(self, input=None, timeout=None):")
    assert communicate.kind == "method"
    assert communicate.depth == 1
    popen = named(entries, "class Popen:")
    assert popen.line < communicate.line <= communicate.end_line <= popen.end_line
    assert named(entries, "def run(").title.endswith(
        "Run command with arguments and return a CompletedProcess instance."
    )


def test_javascript_methods_nest_in_their_class_with_their_jsdoc_summary() -> None:
    text = (DOCS / "code_commander_command.js").read_text()
    lines = text.split("\n")
    entries, _ = build(text, hint="command.js")
    command = named(entries, "class Command extends EventEmitter")
    assert command.line == line_of(lines, "class Command extends EventEmitter {")
    assert lines[command.end_line - 1] == "}"  # the closing brace belongs to the class
    method = named(entries, "command(nameAndArgs, actionOptsOrExecDesc, execOpts)")
    assert (method.kind, method.depth) == ("method", 1)
    assert method.title.endswith("Define a command.")
    assert lines[method.line - 1] == "  command(nameAndArgs, actionOptsOrExecDesc, execOpts) {"
    assert lines[method.end_line - 1] == "  }"
    for e in entries:
        assert " ".join(lines[e.line - 1].split()).startswith(e.title.split(" — ")[0]), e


def test_rest_headings_form_a_tree_on_their_lines() -> None:
    text = (DOCS / "prose_flask_config.rst").read_text()
    lines = text.split("\n")
    entries, _ = build(text, hint="config.rst")
    assert [e.kind for e in entries] == ["heading"] * len(entries)
    for e in entries:
        assert lines[e.line - 1].strip() == e.title, e
    top, debug, builtin = (named(entries, t) for t in ("Configuration Handling", "Debug Mode", "Builtin Config"))
    assert (top.depth, debug.depth) == (0, 1)
    assert debug.end_line == builtin.line - 1  # a section runs to the next heading of its level
    assert top.end_line == len(text.rstrip("\n").split("\n"))


def test_markdown_headings_keep_their_levels() -> None:
    text = (REPO / "README.md").read_text()
    lines = text.split("\n")
    entries, _ = build(text, hint="README.md")
    atx = [(n + 1, line) for n, line in enumerate(lines) if re.match(r"#{1,6} ", line)]
    fenced = [n for n, line in enumerate(lines) if line.startswith("```")]
    atx = [(n, line) for n, line in atx if sum(1 for f in fenced if f < n - 1) % 2 == 0]
    assert [(e.line, e.title) for e in entries] == [(n, line.lstrip("#").strip()) for n, line in atx]
    depth = {len(line) - len(line.lstrip("#")): e.depth for e, (_, line) in zip(entries, atx, strict=True)}
    assert depth[1] < depth[2] < depth.get(3, 99)


def test_a_readme_without_a_file_name_is_mapped_by_its_headings_at_their_levels() -> None:
    """debug's README goes from `##` to `####` and later back to `###`, and has `print :` right above a fence;
    cors's examples once made it read as code, its map then the examples' functions."""
    for name in ("debug-4.4.3.md", "cors-2.8.6.md"):
        text = (READMES / name).read_text()
        lines = text.split("\n")
        entries, _ = build(text)
        fenced = [n for n, line in enumerate(lines) if line.startswith("```")]
        atx = [
            (n + 1, line)
            for n, line in enumerate(lines)
            if re.match(r"#{1,6} ", line) and sum(1 for f in fenced if f < n) % 2 == 0
        ]
        expected = [("heading", n, line.lstrip("#").strip()) for n, line in atx]
        assert [(e.kind, e.line, e.title) for e in entries] == expected
        depth = {e.title: e.depth for e in entries}
        levels = {line.lstrip("#").strip(): len(line) - len(line.lstrip("#")) for _, line in atx}
        for title, level in levels.items():
            assert depth[title] == level - 1, title
    # debug: "Custom formatters" (###) sits right under "Formatters" (##), though "####" came first.
    entries, _ = build((READMES / "debug-4.4.3.md").read_text())
    assert named(entries, "Custom formatters").depth == named(entries, "Formatters").depth + 1


def test_markdown_that_opens_with_an_html_heading_is_mapped_by_both() -> None:
    """picomatch's README opens with `<h1 align="center">Picomatch</h1>`; the map was that one heading."""
    text = (READMES / "picomatch-4.0.7.md").read_text()
    lines = text.split("\n")
    entries, _ = build(text)
    assert (entries[0].title, entries[0].line, entries[0].depth) == ("Picomatch", 1, 0)
    sections = [(n + 1, line[3:].strip()) for n, line in enumerate(lines) if line.startswith("## ")]
    assert [(e.line, e.title) for e in entries if e.depth == 1] == sections
    assert all(e.end_line <= entries[0].end_line for e in entries)


def test_html_headings_and_a_one_line_page_get_exact_offsets() -> None:
    body = "".join(
        f"<h{level}>{title}</h{level}>\n<p>{title} text, " + "words " * 200 + "</p>\n"
        for level, title in ((1, "Guide"), (2, "Install"), (2, "Configure"), (3, "Proxy"))
    )
    page = f"<!doctype html>\n<html><body>\n{body}</body></html>\n"
    for text in (page, page.replace("\n", "")):
        entries, tokens = build(text, hint="text/html")
        assert [(e.title, e.depth) for e in entries] == [("Guide", 0), ("Install", 1), ("Configure", 1), ("Proxy", 2)]
        for e in entries:
            at = text.encode().index(f">{e.title}</h".encode()) - 3
            assert starts_at(tokens, e, at), e
            assert e.line == text[:at].count("\n") + 1


def test_json_gets_its_schema_and_the_line_of_every_top_level_key_and_record() -> None:
    text = (DOCS / "json_botocore_sqs_service-2.json").read_text()
    lines = text.split("\n")
    entries, _ = build(text, kind="json")
    operations = named(entries, "operations: object, map of 23 keys")
    assert operations.line == line_of(lines, '  "operations":{')
    assert operations.depth == 0
    send = named(entries, "operations.SendMessage")
    assert send.line == line_of(lines, '    "SendMessage":{')
    assert (send.kind, send.depth) == ("key", 1)
    assert lines[send.end_line - 1].strip() in ("}", "},")
    assert named(entries, "version: string").title == 'version: string = "2.0"'
    shape_type = named(entries, "shapes.*.type: string")
    assert shape_type.kind == "schema"
    assert '= "' in shape_type.title  # one short example value
    assert named(entries, "metadata.protocols: array").title.endswith("1 items")


def test_json_records_are_listed_by_what_tells_them_apart() -> None:
    # `pip inspect`'s shape: a distribution's name and summary sit one object down (`metadata.name`). The outline
    # listed each record by its first member it could print (`installer="pip"`, the same for all of them).
    installed = [
        {
            "metadata": {"metadata_version": "2.1", "name": name, "version": "1.0", "summary": summary},
            "installer": "pip",
        }
        for name, summary in [
            ("tzdata", "Provider of IANA time zone data"),
            ("idna", "Internationalized Domain Names in Applications (IDNA)"),
            ("six", "Python 2 and 3 compatibility utilities"),
        ]
    ]
    entries, _ = build(json.dumps({"version": "1", "installed": installed}, indent=2), kind="json")
    records = [e.title for e in entries if e.kind == "record"]
    assert records == [
        "installed[0] tzdata: Provider of IANA time zone data",
        "installed[1] idna: Internationalized Domain Names in Applications (IDNA)",
        "installed[2] six: Python 2 and 3 compatibility utilities",
    ]


def test_json_on_one_line_still_gets_an_outline_with_exact_token_offsets() -> None:
    pretty = (DOCS / "json_botocore_sqs_service-2.json").read_text()
    text = json.dumps(json.loads(pretty), separators=(",", ":"))  # as structuredContent is stored
    entries, tokens = build(text, kind="json")
    assert {e.title for e in entries} == {e.title for e in build(pretty, kind="json")[0]}
    assert {e.line for e in entries} == {1}
    data = text.encode()
    for name in ("SendMessage", "DeleteQueue", "ReceiveMessage"):
        entry = named(entries, f"operations.{name}")
        at = data.index(f'"{name}":{{"name"'.encode())
        assert starts_at(tokens, entry, at)


def test_a_log_gets_its_span_line_count_and_most_frequent_templates() -> None:
    text = (DOCS / "logs_dpkg.log").read_text()
    lines = text.split("\n")
    records, *entries = build(text, hint="dpkg.log")[0]
    nonblank = [line for line in lines if line.strip()]
    assert records.kind == "records"  # its events, for memory_select
    # Counted over the head at store time (a 300 KB log): "about", within a few percent.
    count = re.match(r"Records: about ([\d,]+) events of a log \(fields: time, level, message", records.title)
    assert count is not None
    assert abs(int(count[1].replace(",", "")) - len(nonblank)) <= 0.05 * len(nonblank)
    summary = entries[0]
    assert summary.kind == "summary"
    assert summary.title == f"{len(nonblank):,} lines, {nonblank[0][:19]} to {nonblank[-1][:19]}"
    installed = [n + 1 for n, line in enumerate(lines) if line[20:].startswith("status installed ")]
    template = named(entries, f"{len(installed):,}x status installed <*> <*>")
    assert (template.kind, template.line, template.end_line) == ("template", installed[0], installed[-1])


def test_plain_text_gets_its_paragraphs_with_their_first_words() -> None:
    text = (LICENSES / "flask-3.1.3-LICENSE.txt").read_text()
    lines = text.split("\n")
    entries, _ = build(text)
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    assert len(entries) == len(paragraphs)
    for e, paragraph in zip(entries, paragraphs, strict=True):
        assert e.kind == "paragraph"
        assert lines[e.line - 1].strip().startswith(e.title.split()[0])
        assert paragraph.split()[0] == e.title.split()[0]
        assert e.end_line - e.line == paragraph.strip().count("\n")


def test_a_plain_text_is_mapped_by_its_numbered_sections_with_their_paragraphs_under_them() -> None:
    """A licence with no markup: its map was its paragraphs' first words, and in 400 tokens only their names."""
    texts = REPO / "tests" / "data" / "plain-texts"
    for name, first in (("Apache-2.0.txt", 1), ("GPL-2.txt", 0)):
        text = (texts / name).read_text()
        lines = text.split("\n")
        entries, _ = build(text)
        numbered = [
            (n + 1, line.strip())
            for n, line in enumerate(lines)
            if re.match(rf"\s*({'|'.join(map(str, range(first, 13)))})\. \S", line)
        ]
        heads = [(e.line, e.title) for e in entries if e.kind == "heading"]
        assert [n for n, _ in heads] == [n for n, _ in numbered]
        assert all(line.startswith(title.rstrip("…")) for (_, title), (_, line) in zip(heads, numbered, strict=True))
        sections = [e for e in entries if e.kind == "heading"]
        for e, after in itertools.pairwise(sections):
            assert e.end_line == after.line - 1
        assert all(e.depth == 1 for e in entries if e.kind == "paragraph" and e.line > sections[0].line)
        # In a reference's 400 tokens every section is shown whole, not a names-only line of first words.
        shown, _ = view.bounded(entries, 400)
        assert not any(line.startswith("Also at top level") for line in shown)
        assert sum(1 for line in shown if not line.startswith(" ") and re.match(r"L\d+(-\d+)? \d+\. ", line)) == len(
            sections
        )


def test_vim_help_is_mapped_by_its_numbered_sections_not_its_table_of_contents() -> None:
    """Vim's help puts a rule of `=` right above each `1. Single repeats`, after a table of contents that numbers
    them first: the map named the rules' `=====` and missed every section."""
    text = (REPO / "tests" / "data" / "plain-texts" / "vim-9.0-repeat.txt").read_text()
    lines = text.split("\n")
    entries, _ = build(text)
    heads = [(e.line, e.title.split(" *")[0]) for e in entries if e.kind == "heading"]
    expected = [(n + 1, line.split("\t")[0]) for n, line in enumerate(lines) if n and lines[n - 1].startswith("=====")]
    assert heads == expected
    assert len(heads) == 8
    assert not any(e.title.startswith("===") for e in entries)


def test_a_markdown_heading_above_a_thematic_break_is_one_heading() -> None:
    text = "# Tool\n\n## Installation\n\n### A. Getting it\n----\n#### Linux\n\nrun it\n\n"
    text += "### B. Setting it up\n----\ndone\n"
    entries, _ = build(text)
    assert [(e.title, e.depth) for e in entries] == [
        ("Tool", 0),
        ("Installation", 1),
        ("A. Getting it", 2),
        ("Linux", 3),
        ("B. Setting it up", 2),
    ]


def test_outlines_are_stored_with_the_text(tmp_path: Path) -> None:
    from offprompt.artifacts import TextArtifact
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    settings = MemorySettings(name="outline", data_dir=tmp_path)
    memory = TaskMemory.open(settings)
    text = (DOCS / "prose_flask_config.rst").read_text()
    meta = {"mcp": {"uri": "file:///config.rst"}}
    try:
        # Shown in the reference: made by the store.
        shown = memory.store([TextArtifact(value=text, meta=meta)], tool="fs.read", outline_tokens=400)
        stored = list((tmp_path / "outline" / "text" / "raw" / shown.namespace).glob("*.outline.json"))
        assert [p.name for p in stored] == ["0.outline.json"]
        assert shown.outline[0].title == "Configuration Handling"
        # Not shown: the indexer makes the same one once the text is chunked (neither the store nor being
        # searchable by words waits for it).
        ref = memory.store([TextArtifact(value=text, meta=meta)], tool="fs.read")
        assert memory.text.wait_chunked([ref.namespace], 60)
        raw = tmp_path / "outline" / "text" / "raw" / ref.namespace
        deadline = time.monotonic() + 60
        while not (raw / "0.outline.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p.name for p in raw.glob("*.outline.json")] == ["0.outline.json"]
        assert memory.outline(ref.namespace) == build(text, hint="file:///config.rst")[0]
        assert memory.outline(shown.namespace) == memory.outline(ref.namespace)
    finally:
        memory.close()
    reopened = TaskMemory.open(settings)  # read back from disk by a later process
    try:
        assert reopened.outline(ref.namespace)[0].title == "Configuration Handling"
    finally:
        reopened.close()


def test_an_outline_asked_for_before_the_indexer_made_it_is_made_then(tmp_path: Path) -> None:
    from offprompt.artifacts import TextArtifact
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    memory = TaskMemory.open(MemorySettings(name="early", data_dir=tmp_path), resume_indexing=False)
    text = (DOCS / "code_subprocess.py").read_text()
    try:
        held: list[object] = []
        memory.text._enqueue = lambda *job: held.append(job)  # type: ignore[attr-defined,method-assign]
        ref = memory.store([TextArtifact(value=text)], tool="fs.read")
        assert held  # the indexer has not run: nothing made the outline yet
        assert memory.outline(ref.namespace) == build(text)[0]
    finally:
        memory.close()


def test_a_bounded_outline_names_every_top_level_definition_public_and_large_first() -> None:
    """argparse's 2,600 lines in a reference's 400 tokens: its main classes are there, every top-level
    definition is at least named with its line, and what was left out is said exactly."""
    from offprompt.memory.outline import view
    from offprompt.memory.outline.view import bounded, left_out
    from offprompt.tokens import count_tokens

    assert count_tokens(view._NAMES_HEAD) + 1 == view._NAMES_HEAD_TOKENS  # written out, not counted at import

    entries, _ = build((DOCS / "code_argparse.py").read_text())
    shown, left = bounded(entries, 400)
    text = "\n".join(shown)
    assert count_tokens(text) <= 400
    for name, line in (("ArgumentParser", 1715), ("Namespace", 1315), ("HelpFormatter", 157), ("Action", 790)):
        assert f"L{line}-" in text, name  # a full line, with its span
        assert f"class {name}(" in text
    top = [e for e in entries if e.depth == 0]
    assert all(f"L{e.line}" in text for e in top)  # every top-level entry has a line or a name
    assert all(e.depth > 0 for e in left)
    assert len(shown) + len(left) > len(entries) - len(top)  # nothing counted twice
    assert left_out(left).startswith(f"{len(left)} more entries (")
    assert "methods" in left_out(left)


def test_a_git_log_is_outlined_as_its_commits(tmp_path: Path) -> None:
    """Real `git log` output of a scratch repository, in both formats: one entry per commit, hash, date, subject."""
    import subprocess

    def git(*args: str) -> str:
        env = {
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@x",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@x",
        }
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True, env=env
        ).stdout

    git("init", "-q")
    for n in range(12):
        (tmp_path / "f.txt").write_text(f"{n}\n")
        git("add", "f.txt")
        date = f"2026-11-2{n % 10}T12:00:00"
        git("commit", "-q", "-m", f"change {n}: tune the parser", "-m", f"Body of change {n}.", "--date", date)
    for text in (git("log", "--stat"), git("log", "--oneline")):
        records, *entries = build(text)[0]
        assert records.title.startswith("Records: 12 commits of a git log")  # for memory_select
        assert len(entries) == 12
        assert all(e.kind == "commit" for e in entries)
        assert entries[0].title.endswith("change 11: tune the parser")
        assert re.match(r"^[0-9a-f]{7,10} ", entries[0].title)
    full, _ = build(git("log"))
    assert " 2026-11-21 change 11" in full[1].title  # the date, as YYYY-MM-DD


def test_an_accessibility_snapshot_is_outlined_by_its_landmarks_headings_and_uids() -> None:
    """A real chrome-devtools-mcp snapshot (tests/data/chrome-devtools-mcp): the page's map, not log templates."""
    text = (REPO / "tests" / "data" / "chrome-devtools-mcp" / "python-policy.snapshot.txt").read_text()
    entries, _ = build(text)
    titles = [e.title for e in entries]
    assert 'heading "3. Python Packaging" (h2) uid=1_172' in titles
    assert "main uid=1_8" in titles
    assert 'navigation "main navigation" uid=1_1276' in titles
    lines = text.splitlines()
    packaging = named(entries, 'heading "3. Python Packaging"')
    assert lines[packaging.line - 1].strip().startswith('uid=1_172 heading "3. Python Packaging"')
    assert packaging.end_line < named(entries, 'heading "4. Packaged Modules"').line  # up to the next h2
    assert {e.kind for e in entries} == {"heading", "landmark"}
