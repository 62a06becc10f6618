"""Records of tables and logs: each kind read into typed records that memory_select computes over, made after the
reference, never searched, counted toward the quota, rebuilt by reindex.

The texts in tests/data/records are written by hand in the shapes of the real tools' output (`git log --stat`,
`pytest -v`, `go test -v`, `cargo test`, Jest, Vitest, a JUnit XML report, Maven Surefire, `ps aux`, `docker ps`,
`kubectl get pods`, `ls -l`, a Python logging log, `dpkg.log`, CSV, TSV, a Markdown table, `python -m unittest -v`,
apt's history.log, `dpkg -s`, `pip show`, `npm install --loglevel verbose`, `pip install -v`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact, from_result
from offprompt.errors import InvalidArgumentError
from offprompt.memory import chunking, records
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

from ..cli.run import run
from ..support import REPO, meta, text_of

DATA = REPO / "tests" / "data" / "records"

pytestmark = pytest.mark.anyio


def stored(memory: TaskMemory, name: str) -> str:
    text = (DATA / name).read_text(encoding="utf-8")
    return memory.store([TextArtifact(value=text)], tool="t.run", outline_tokens=400).namespace


def selected(memory: TaskMemory, namespace: str, expression: str) -> list[Any]:
    return [json.loads(line) for line in memory.select(namespace, expression).text.split("\n") if line]


# Each kind, and one question a model would compute over it.
AGGREGATIONS = [
    ("git_log_stat.txt", "max_by(.files_changed) | .hash[:7]", "0badc0f"),
    ("git_log_stat.txt", "map(.insertions) | add", 102),
    (
        "pytest_v.txt",
        "group_by(.outcome) | map({(.[0].outcome): length}) | add",
        {"passed": 2, "failed": 2, "skipped": 1},
    ),
    ("pytest_v.txt", '.[] | select(.test | endswith("test_html")) | .message', "KeyError: 'p'"),
    ("go_test_v.txt", 'map(select(.outcome == "failed")) | map(.test)', ["TestRender", "TestRender/html"]),
    ("go_test_v.txt", "max_by(.duration) | .package", "example.com/doc/store"),
    (
        "cargo_test.txt",
        "group_by(.outcome) | map({(.[0].outcome): length}) | add",
        {"passed": 2, "failed": 1, "skipped": 1},
    ),
    ("jest.txt", '.[] | select(.outcome == "failed") | [.file, .test]', ["src/format.test.js", "formats dates"]),
    ("vitest.txt", 'map(select(.outcome == "passed")) | length', 2),
    (
        "junit.xml",
        "group_by(.outcome) | map({(.[0].outcome): length}) | add",
        {"passed": 1, "failed": 1, "error": 1, "skipped": 1},
    ),
    ("junit.xml", "max_by(.duration) | .test", "removesItem"),
    ("surefire.txt", "map(.run) | add", 11),
    ("packages.csv", "max_by(.size_kb) | .name", "git"),
    ("packages.csv", '.[] | select(.name == "zlib1g") | .description', "compression library - runtime"),
    ("hosts.tsv", "max_by(.cpu_pct) | .host", "db-1"),
    ("table.md", "max_by(.ms) | .case", "render"),  # 120 above 10 and 9: numbers as numbers
    ("ps.txt", "max_by(.RSS) | .COMMAND", "/usr/lib/firefox/firefox -contentproc -childID 3"),
    ("docker_ps.txt", 'map(select(.STATUS | startswith("Up"))) | map(.NAMES)', ["db", "cache"]),
    ("kubectl.txt", 'map(select(.STATUS != "Running")) | .[0].NAME', "worker-5c8d7f9b4-lq8rt"),
    ("ls_l.txt", 'map(select(.type == "file")) | max_by(.size) | .name', "offprompt.pyz"),
    # Python's cProfile (`python -m cProfile -s cumulative`): a preamble, then a header of lowercase words.
    ("cprofile.txt", 'max_by(.tottime) | ."filename:lineno(function)"', "render.py:88(render_row)"),
    ("cprofile.txt", "map(select(.cumtime >= 0.05)) | length", 8),
    ("app.log", "group_by(.level) | map({(.[0].level): length}) | add", {"INFO": 3, "DEBUG": 1, "WARN": 1, "ERROR": 2}),
    ("app.log", "map(select(.status >= 500)) | map(.path)", ["/v1/items", "/v1/users"]),
    ("dpkg.log", 'map(select(.template == "status installed <*> <*>")) | length', 2),
    (
        "unittest_v.txt",
        "group_by(.outcome) | map({(.[0].outcome): length}) | add",
        {"passed": 3, "failed": 1, "error": 1, "skipped": 2},
    ),
    (
        "unittest_v.txt",
        '.[] | select(.outcome == "error") | [.test, .message]',
        ["tests.test_render.RenderTests.test_html", "KeyError: 'p'"],
    ),
    ("unittest_v.txt", 'map(select(.reason == "pandoc is required")) | length', 2),
    ("apt_history.log", 'max_by(.Install | length) | .["Start-Date"]', "2026-11-02  09:14:07"),
    ("apt_history.log", "map(.Upgrade | length) | add", 2),
    (
        "apt_history.log",
        ".[] | select(.Remove) | .Install | map(.details)",
        ["1:2.45.2-1~bpo12+1", "1:2.45.2-1~bpo12+1, automatic"],
    ),
    ("dpkg_status.txt", 'max_by(.["Installed-Size"]) | .Package', "libc6"),
    ("dpkg_status.txt", "map(.Version)", ["3.134", "2.36-9+deb12u9", "1:1.2.13.dfsg-1"]),
    ("pip_show.txt", "map(.Version)", ["2.32.3", "3.10", "1.16"]),  # versions stay as written, 3.10 not 3.1
    ("pip_show.txt", "max_by(.Requires | length) | .Name", "requests"),
    # Logs without timestamps, read by their lines' templates (npm --loglevel verbose, pip install -v).
    ("npm_verbose.log", 'map(select(.cache == "updated")) | length', 2),
    (
        "npm_verbose.log",
        "max_by(.ms) | [.ms, .url]",
        [2310, "https://registry.npmjs.org/@babel/core/-/core-7.24.0.tgz"],
    ),
    (
        "npm_verbose.log",
        'map(select(.template | startswith("npm http fetch")) | select(.url | endswith(".tgz"))) | length',
        3,
    ),
    (
        "npm_verbose.log",
        'map(select(.package)) | map("\\(.package)@\\(.version // "")") | .[:2]',
        ["npm@10.8.2", "node@v20.11.1"],
    ),
    # npm's debug log (`_logs/*-debug-0.log`): each line starts with its sequence number, not a time.
    ("npm_debug.log", 'map(select(.template | contains("http fetch GET"))) | length', 8),
    ("npm_debug.log", "max_by(.ms // 0) | .url", "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"),
    ("npm_debug.log", 'map(select(.template | contains("placeDep"))) | length', 4),
    ("pip_install_v.txt", 'map(select(.template | startswith("Requirement already satisfied"))) | length', 2),
    ("pip_install_v.txt", "map(select(.kB)) | max_by(.kB) | .downloading", "certifi-2024.2.2-py3-none-any.whl"),
    ("pip_install_v.txt", 'map(select(.from == "httpx")) | map(.collecting)', ["anyio", "certifi", "httpcore==1.*"]),
]


@pytest.mark.parametrize(("name", "expression", "expected"), AGGREGATIONS)
def test_memory_select_computes_over_the_records_of_each_kind(
    memory: TaskMemory, name: str, expression: str, expected: Any
) -> None:
    namespace = stored(memory, name)
    assert selected(memory, namespace, expression) == [expected]


async def test_the_reference_says_records_exist_with_a_line_that_runs(memory: TaskMemory, client: Client) -> None:
    text = (DATA / "git_log_stat.txt").read_text(encoding="utf-8")
    reference = memory.store([TextArtifact(value=text)], tool="git.log", outline_tokens=400).to_result()
    shown = "\n".join(block.text for block in reference.content if hasattr(block, "text"))
    assert "Records: 3 commits of a git log (fields: hash, author, email, date, files_changed" in shown
    namespace = reference.meta["offprompt"]["artifact_namespace"] if reference.meta else ""
    example = re.search(r"expression '([^']+)'", shown)
    assert example is not None
    answer = await client.call_tool("memory_select", {"artifact_namespace": namespace, "expression": example[1]})
    assert not answer.is_error, text_of(answer)
    assert json.loads(text_of(answer).split("\n")[0])["hash"].startswith("0badc0f")
    assert memory.payload(namespace) == text.encode()  # records are derived: the text stays as it came

    outline = await client.call_tool("memory_outline", {"artifact_namespace": namespace})
    assert "Records: 3 commits of a git log" in text_of(outline)
    listed = await client.call_tool("memory_list", {})
    assert "records for memory_select: 3 commits (item 0)" in text_of(listed)
    assert meta(listed)["namespaces"][0]["records"][0]["count"] == 3


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_the_outlines_example_line_runs_on_each_kind(memory: TaskMemory, name: str) -> None:
    namespace = stored(memory, name)
    first = memory.outline(namespace)[0]
    assert first.kind == "records"
    example = re.search(r"expression '([^']+)'", first.title)
    assert example is not None
    answer = selected(memory, namespace, example[1])
    assert answer
    assert answer != [None]


def test_a_big_log_is_counted_about_in_the_reference_and_exactly_once_made(memory: TaskMemory) -> None:
    lines = [
        f"2026-11-30 08:{i // 60 % 60:02d}:{i % 60:02d} {'ERROR' if i % 7 == 0 else 'INFO'} job {i} done"
        for i in range(6000)
    ]
    reference = memory.store([TextArtifact(value="\n".join(lines) + "\n")], tool="t.log", outline_tokens=400)
    assert reference.outline[0].title.startswith("Records: about ")
    assert selected(memory, reference.namespace, 'map(select(.level == "ERROR")) | length') == [858]
    assert memory.outline(reference.namespace)[0].title.startswith("Records: 6,000 events of a log")


def test_text_that_is_no_table_has_no_records_and_is_selected_as_its_lines(memory: TaskMemory) -> None:
    prose = "The deploy failed twice.\nWe rolled back, then forward.\n\nNobody was paged.\n"
    namespace = memory.store([TextArtifact(value=prose)], tool="t.note", outline_tokens=400).namespace
    assert not memory.outline(namespace)[0].title.startswith("Records")
    assert selected(memory, namespace, "length") == [3]  # its non-blank lines, as `jq -R` reads them
    assert selected(memory, namespace, ".[2]") == [{"line": 4, "text": "Nobody was paged."}]


#: `apt-get install -s` (a simulation): a few lines, then one `Inst`/`Conf` line per package, in the shape of
#: apt 2.6's output, written here by hand. No reader knows it; its lines still answer a count.
APT_SIMULATION = """Reading package lists...
Building dependency tree...
Reading state information...
The following NEW packages will be installed:
  libgd3 libjbig0 nginx nginx-common
0 upgraded, 4 newly installed, 0 to remove and 11 not upgraded.
Inst libjbig0 (2.1-6.1 Debian:12.8/stable [amd64])
Inst libgd3 (2.3.3-9 Debian:12.8/stable [amd64])
Inst nginx-common (1.22.1-9 Debian:12.8/stable [all])
Inst nginx (1.22.1-9 Debian:12.8/stable [amd64])
Conf libjbig0 (2.1-6.1 Debian:12.8/stable [amd64])
Conf libgd3 (2.3.3-9 Debian:12.8/stable [amd64])
Conf nginx-common (1.22.1-9 Debian:12.8/stable [all])
Conf nginx (1.22.1-9 Debian:12.8/stable [amd64])
"""


def test_a_text_no_reader_knows_answers_a_count_over_its_lines(memory: TaskMemory) -> None:
    namespace = memory.store([TextArtifact(value=APT_SIMULATION)], tool="shell.run", outline_tokens=400).namespace
    expression = 'map(select(.text | test("^Inst .*amd64"))) | length'
    assert selected(memory, namespace, expression) == [3]
    # A tool that repeats its text as structuredContent (`{"result": text}`) holds no JSON of its own to point to.
    copied = mt.CallToolResult(
        content=[mt.TextContent(text=APT_SIMULATION)], structured_content={"result": APT_SIMULATION}
    )
    twice = memory.store(from_result(copied), tool="shell.run").namespace
    assert selected(memory, twice, expression) == [3]


#: A module under a comment block whose code is mostly indented (a class's methods): the shape of CPython's
#: Lib/argparse.py (`# Author: …` lines, then classes), written here by hand.
COMMENTED_CODE = (
    "# Author: A. Writer <a.writer@example.org>.\n# New maintainer as of 1 May 2020:  B. Keeper\n\n"
    "class Parser:\n" + "".join(f"    def parse_{n}(self, args):\n        return args[{n}]\n\n" for n in range(60))
)


def test_code_under_a_comment_block_is_no_table_of_columns(memory: TaskMemory) -> None:
    # Before: the comment marker `#` and the header's words read as two columns, and every line of the module
    # became a record ("about 2,165 rows of a table of columns (fields: #, Author: …)" for argparse.py).
    namespace = memory.store([TextArtifact(value=COMMENTED_CODE)], tool="fs.read", outline_tokens=400).namespace
    assert not memory.outline(namespace)[0].title.startswith("Records")
    assert selected(memory, namespace, ".[0] | keys") == [["line", "text"]]  # its lines, not rows of columns


def test_records_are_never_search_hits(memory: TaskMemory) -> None:
    namespace = stored(memory, "git_log_stat.txt")
    assert selected(memory, namespace, "length") == [3]
    hits, _ = memory.query("files_changed insertions deletions", namespace=namespace, mode="lexical")
    assert hits
    assert all('"files_changed"' not in hit.text for hit in hits)


def test_records_count_toward_the_quota_and_are_private(memory: TaskMemory, settings: MemorySettings) -> None:
    namespace = stored(memory, "packages.csv")
    text_only = memory.used_bytes()
    selected(memory, namespace, "length")
    path = settings.directory / "text" / "raw" / namespace / "0.records"
    assert memory.used_bytes() - text_only >= path.stat().st_size > 0
    assert path.stat().st_mode & 0o777 == 0o600
    memory.delete(namespace)
    assert not path.exists()


def test_records_over_their_cap_are_skipped_and_said_never_failing_the_store(tmp_path: Path) -> None:
    memory = TaskMemory.open(MemorySettings(name="cap", data_dir=tmp_path, records_max_bytes=200))
    try:
        namespace = stored(memory, "packages.csv")  # the store itself goes through
        with pytest.raises(InvalidArgumentError, match=r"6 rows, not kept: their JSON would take [\d,]+ bytes, over"):
            memory.select(namespace, "length")
        assert memory.load(namespace).to_text() == (DATA / "packages.csv").read_text(encoding="utf-8")
    finally:
        memory.close()


def test_reindex_makes_the_records_again(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    settings = MemorySettings(name="re", data_dir=tmp_path / "data")
    memory = TaskMemory.open(settings)
    namespace = stored(memory, "pytest_v.txt")
    made = selected(memory, namespace, ".")
    memory.close()
    path = settings.directory / "text" / "raw" / namespace / "0.records"
    path.write_bytes(b"[]")  # stale, as if made by an older reader
    code, _, err = run(capfd, "memory", "reindex", "--data-dir", str(settings.data_dir), "--memory-name", "re")
    assert code == 0, err
    assert json.loads(path.read_bytes()) == made[0]


def test_real_git_log_stat_ls_and_pytest_outputs(memory: TaskMemory, tmp_path: Path) -> None:
    """The tools' own output, made here: the commit that touched the most files, the biggest file, the tests that
    failed."""
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
        ).stdout

    git("init", "-q")
    for n, files in enumerate([1, 9, 10, 2]):  # 10 above 9: numbers as numbers
        for k in range(files):
            (repo / f"f{n}_{k}.txt").write_text("x\n" * (k + 1))
        git("add", ".")
        git("commit", "-q", "-m", f"change {n} of {files} files")
    log = stored_text(memory, git("log", "--stat"))
    assert selected(memory, log, "max_by(.files_changed) | .subject") == ["change 2 of 10 files"]

    (repo / "big.bin").write_bytes(b"\0" * 123_456)
    listing = subprocess.run(["ls", "-l", str(repo)], capture_output=True, text=True, check=True).stdout
    ls = stored_text(memory, listing)
    assert selected(memory, ls, "max_by(.size) | [.name, .size]") == [["big.bin", 123_456]]

    (tmp_path / "test_sample.py").write_text(
        "import pytest\n\ndef test_one():\n    assert 1\n\ndef test_two():\n    assert 1 == 2, 'two is not one'\n\n"
        "@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_many(n):\n    assert n != 2\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    tests = stored_text(memory, run)
    counts = "group_by(.outcome) | map({(.[0].outcome): length}) | add"
    assert selected(memory, tests, counts) == [{"passed": 3, "failed": 2}]
    failed = selected(memory, tests, '[.[] | select(.outcome == "failed") | .test | split("::")[1]]')
    assert failed == [["test_two", "test_many[2]"]]


def stored_text(memory: TaskMemory, text: str) -> str:
    return memory.store([TextArtifact(value=text)], tool="t.run").namespace


def test_a_column_of_mostly_text_keeps_its_numbers_as_written(memory: TaskMemory) -> None:
    """A package table's Version column holds `3.134` beside `2.12.1+dfsg`: read cell by cell, `3.134` became a
    number, `3.10` became 3.1 and the reference's example was `max_by(.Version)`, which ranks numbers below text.
    A column is numbers only when most of its cells are; the sizes beside it stay numbers."""
    rows = [("adduser", "3.134", 686), ("python3.10", "3.10", 120), ("libfreetype6", "2.12.1+dfsg-5", 981)]
    rows += [(f"lib{n}", f"1.{n}.0-{n}", 100 + n) for n in range(5)]
    text = "Package\tVersion\tInstalled-Size\n" + "".join(f"{p}\t{v}\t{s}\n" for p, v, s in rows)
    reference = memory.store([TextArtifact(value=text)], tool="dpkg.query", outline_tokens=400)
    namespace = reference.namespace
    assert selected(memory, namespace, "map(.Version)") == [[v for _, v, _ in rows]]
    assert selected(memory, namespace, 'max_by(.["Installed-Size"]) | .Package') == ["libfreetype6"]
    assert "max_by(.Version)" not in memory.outline(namespace)[0].title


def test_a_long_logs_reference_shows_its_records_line_whole(memory: TaskMemory) -> None:
    """A git log of 400 commits: every commit is a top-level outline entry, too many to name in 400 tokens, and
    the records line (the one that says memory_select can count them) was cut to `fields: hash, autho` inside
    the "Also at top level" line."""
    commits = [
        f"commit {n:040x}\nAuthor: Ada Lovelace <ada@example.org>\nDate:   Mon Nov 30 18:02:11 2026 +0100\n\n"
        f"    change number {n}\n\n src/module_{n}.py | 2 ++\n 1 file changed, 2 insertions(+)\n"
        for n in range(400)
    ]
    reference = memory.store([TextArtifact(value="\n".join(commits))], tool="git.log", outline_tokens=400)
    shown = "\n".join(block.text for block in reference.to_result().content if hasattr(block, "text"))
    line = next(line for line in shown.split("\n") if "Records:" in line)
    assert line.lstrip().startswith("L1-"), line
    assert "fields: hash, author, email, date, files_changed" in line
    assert "memory_select reads them as a JSON array" in line


def test_a_history_whose_newest_commits_are_big_is_counted_near_its_size_in_the_reference(memory: TaskMemory) -> None:
    """The reference counts a big text's records from its head: a `git log --stat` whose newest commits each touch
    forty files (the head) and whose older ones touch one was said to hold "about 387 commits" for 810."""

    def commit(n: int, files: int) -> str:
        stat = "".join(f" src/part_{n}_{k}.py | 2 ++\n" for k in range(files))
        return (
            f"commit {n:040x}\nAuthor: Ada Lovelace <ada@example.org>\nDate:   Mon Nov 30 18:02:11 2026 +0100\n\n"
            f"    change number {n}\n\n{stat} {files} files changed, {2 * files} insertions(+)\n"
        )

    history = "\n".join(commit(n, 40 if n < 60 else 1) for n in range(800))
    reference = memory.store([TextArtifact(value=history)], tool="git.log", outline_tokens=400)
    said = re.search(r"Records: about ([\d,]+) commits", reference.outline[0].title)
    assert said is not None, reference.outline[0].title
    assert abs(int(said[1].replace(",", "")) - 800) <= 40


def test_a_table_whose_first_column_changes_past_its_head_is_counted_by_its_lines(memory: TaskMemory) -> None:
    """A row a line: the first column's shape (`Adelie` in every row of the head, then `Gentoo`) says nothing of
    the rows past the head, which the lines count."""
    rows = [
        f'{"Adelie" if n < 400 else "Gentoo"},{n},Torgersen,"Adult, 1 Egg Stage",39.{n % 10},181' for n in range(800)
    ]
    text = "species,sample,island,stage,culmen_mm,flipper_mm\n" + "\n".join(rows) + "\n"
    reference = memory.store([TextArtifact(value=text)], tool="db.query", outline_tokens=400)
    said = re.search(r"Records: about ([\d,]+) rows", reference.outline[0].title)
    assert said is not None, reference.outline[0].title
    assert abs(int(said[1].replace(",", "")) - 800) <= 40


def unittest_run(tmp_path: Path) -> str:
    """`python -m unittest -v` over four tests: one passes, one fails, one is skipped, one errs."""
    (tmp_path / "test_sample.py").write_text(
        "import unittest\n\nclass Sample(unittest.TestCase):\n"
        "    def test_one(self):\n        self.assertTrue(True)\n\n"
        "    def test_two(self):\n        self.assertEqual(1, 2, 'two is not one')\n\n"
        "    @unittest.skip('not on this machine')\n    def test_three(self):\n        pass\n\n"
        "    def test_four(self):\n        raise KeyError('four')\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_sample"], capture_output=True, text=True, cwd=tmp_path
    ).stderr


async def test_a_real_unittest_run_and_apt_stanzas_answer_memory_select(
    memory: TaskMemory, client: Client, tmp_path: Path
) -> None:
    """`python -m unittest -v`'s own output, and apt's history.log (stanzas of `Key: value` lines, in the shape of
    /var/log/apt/history.log on Debian 12), each counted through the memory_select tool; the reference names the
    run's own totals line."""
    run = unittest_run(tmp_path)
    reference = memory.store([TextArtifact(value=run)], tool="t.run", outline_tokens=400).to_result()
    shown = "\n".join(block.text for block in reference.content if hasattr(block, "text"))
    assert "Records: 4 tests of a unittest run" in shown
    namespace = reference.meta["offprompt"]["artifact_namespace"] if reference.meta else ""
    expression = "group_by(.outcome) | map({(.[0].outcome): length}) | add"
    answer = await client.call_tool("memory_select", {"artifact_namespace": namespace, "expression": expression})
    assert json.loads(text_of(answer)) == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
    failed = '.[] | select(.outcome == "failed") | .message'
    answer = await client.call_tool("memory_select", {"artifact_namespace": namespace, "expression": failed})
    assert "two is not one" in json.loads(text_of(answer))
    assert "Ran 4 tests in" in memory.outline(namespace)[0].title

    apt = stored(memory, "apt_history.log")
    most = "max_by(.Install | length) | .Commandline"
    answer = await client.call_tool("memory_select", {"artifact_namespace": apt, "expression": most})
    assert json.loads(text_of(answer)) == "apt-get install -y openjdk-17-jdk"


def test_a_column_of_versions_stays_text_even_when_each_reads_as_a_decimal(memory: TaskMemory) -> None:
    """A TSV's Version column of `3.134`, `3.10` and `2.1` was typed as numbers (3.10 read 3.1); a column named
    for versions, or holding one of a version's shapes (`1.2.10`, `1:2.3-4`), keeps every cell as written."""
    text = "Package\tVersion\tInstalled-Size\nadduser\t3.134\t849\npython3.10\t3.10\t120\nsix\t2.1\t99\n"
    namespace = stored_text(memory, text)
    assert selected(memory, namespace, "map(.Version)") == [["3.134", "3.10", "2.1"]]
    assert selected(memory, namespace, 'map(.["Installed-Size"]) | add') == [1068]
    text = "pkg,v\na,1.5\nb,1.2.10\nc,1:2.3-4\nd,2.0\n"
    namespace = stored_text(memory, text)
    assert selected(memory, namespace, "map(.v)") == [["1.5", "1.2.10", "1:2.3-4", "2.0"]]


def test_a_records_line_past_sixteen_fields_says_how_many_more(memory: TaskMemory) -> None:
    """A wide table's records line names its first 16 fields and says how many more it has, never a bare `…`."""
    names = [f"metric_{n}" for n in range(20)]
    text = ",".join(names) + "\n" + "".join(",".join(str(r * n) for n in range(20)) + "\n" for r in range(5))
    reference = memory.store([TextArtifact(value=text)], tool="t.csv", outline_tokens=400)
    title = reference.outline[0].title
    assert "metric_15 and 5 more)" in title, title


def test_a_unittest_log_of_several_runs_keeps_every_runs_tests(memory: TaskMemory) -> None:
    """CPython's regrtest prints one unittest run per test file, each with its failures and `Ran N tests` line:
    the tests after the first run's summary are read too, and the records line sums the runs."""
    text = (DATA / "unittest_v.txt").read_text(encoding="utf-8")
    namespace = stored_text(memory, text + "\n" + text.replace("tests.test_", "tests.other_"))
    counts = "group_by(.outcome) | map({(.[0].outcome): length}) | add"
    assert selected(memory, namespace, counts) == [{"passed": 6, "failed": 2, "error": 2, "skipped": 4}]
    failed = '[.[] | select(.outcome == "failed") | .message]'
    assert selected(memory, namespace, failed) == [["AssertionError: Lists differ: ['a\\tb'] != ['a', 'b']"] * 2]
    assert "2 runs: Ran 14 tests in 0.024s in all" in memory.outline(namespace)[0].title


async def test_memory_list_shows_each_texts_records_as_they_are_now(
    memory: TaskMemory, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing keeps no stale summary: records made after a first listing (by memory_select) show in the next
    one, and records made again (a reindex under a smaller cap) show as they are then."""
    monkeypatch.setattr(memory.text, "_enqueue", lambda *job: None)  # no indexer: records wait for memory_select
    first, second = stored(memory, "git_log_stat.txt"), stored(memory, "ps.txt")
    listed = await client.call_tool("memory_list", {})
    assert "records for memory_select" not in text_of(listed)
    assert selected(memory, first, "length") == [3]
    listed = await client.call_tool("memory_list", {})
    assert "records for memory_select: 3 commits (item 0)" in text_of(listed)
    records = {row["artifact_namespace"]: len(row["records"]) for row in meta(listed)["namespaces"]}
    assert records == {first: 1, second: 0}

    texts = memory.text._texts  # type: ignore[attr-defined]
    texts.records_max_bytes = 10  # what `offprompt memory reindex` does with a smaller `records_max_bytes`
    texts._records(first, 0, fresh=True)
    with pytest.raises(InvalidArgumentError, match="not kept"):
        selected(memory, second, "length")
    listed = await client.call_tool("memory_list", {})
    assert "records for memory_select" not in text_of(listed)  # neither text's records were kept: none listed


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("pytest_v.txt", "the text says '2 failed, 2 passed, 1 skipped in 0.31s'"),
        (
            "cargo_test.txt",
            "the text says 'test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; "
            "finished in 0.00s'",
        ),
        ("jest.txt", "the text says 'Test Suites: 1 failed, 1 passed, 2 total; Tests: 1 failed, 1 skipped, 3 passed"),
        (
            "vitest.txt",
            "the text says 'Test Files  1 failed | 1 passed (2); Tests  1 failed | 2 passed | 1 skipped (4)'",
        ),
    ],
)
def test_a_test_runs_own_summary_is_in_its_records_line(memory: TaskMemory, name: str, said: str) -> None:
    # "What was the overall result of the run and how long did it take?" is answered by the reference itself, as
    # a unittest run's `Ran N tests` line already was: before, pytest's, cargo's and Jest's were not said.
    namespace = stored(memory, name)
    assert said in memory.outline(namespace)[0].title


def test_a_skipped_tests_reason_is_on_its_record(memory: TaskMemory) -> None:
    # "How many tests were skipped for each reason?" needs the reason on the record: pytest -v prints it beside
    # the outcome (`SKIPPED (needs pandoc)`), and -rs in the short summary by file and line.
    namespace = stored(memory, "pytest_v.txt")
    assert selected(memory, namespace, '.[] | select(.outcome == "skipped") | .reason') == ["needs pandoc"]
    only_summary = (
        "tests/a.py::test_one PASSED [ 50%]\ntests/b.py::test_two SKIPPED [100%]\n"
        "=========================== short test summary info ============================\n"
        "SKIPPED [1] tests/b.py:7: slots without weakref_slot only work on PyPy\n"
        "=================== 1 passed, 1 skipped in 0.02s ====================\n"
    )
    namespace = memory.store([TextArtifact(value=only_summary)], tool="t.run").namespace
    assert selected(memory, namespace, '.[] | select(.outcome == "skipped") | .reason') == [
        "slots without weakref_slot only work on PyPy"
    ]


def test_a_wide_table_whose_columns_are_years_is_read_by_its_header(memory: TaskMemory) -> None:
    # An indicator table names a column per year (`Country Name,…,1960,1961,…`, as the World Bank's exports do):
    # a header with numbers among its names was taken for a row of data, and the table had no records at all.
    rows = [
        ("Chad", "TCD", 6.6, 6.2, 5.9),
        ("Korea, Rep.", "KOR", 1.57, 1.48, 1.23),
        ("Niger", "NER", 7.7, 7.6, 7.4),
        ("Yemen, Rep.", "YEM", 8.6, 6.3, 4.4),
    ]
    text = "Country Name,Country Code,Indicator Name,1990,2000,2010\n" + "".join(
        f'"{name}",{code},"Fertility rate, total (births per woman)",{a},{b},{c}\n' for name, code, a, b, c in rows
    )
    namespace = memory.store([TextArtifact(value=text)], tool="t.export").namespace
    assert selected(memory, namespace, 'max_by(.["2010"]) | ."Country Name"') == ["Niger"]
    assert selected(memory, namespace, 'map(select(.["1990"] < 2)) | map(."Country Code")') == [["KOR"]]


def test_a_postgresql_logs_time_zone_and_severity_are_read(memory: TaskMemory) -> None:
    # PostgreSQL's log_line_prefix `%m [%p] ` writes the time with its zone's abbreviation (`… 08:00:01.120 UTC`),
    # then the process id, and the severity (`LOG:`, `ERROR:`, `FATAL:`): the zone was read as the message's first
    # word, every event had no level, and every template of the outline began with `UTC`.
    namespace = stored(memory, "postgresql.log")
    assert selected(memory, namespace, ".[0].time") == ["2026-11-30 08:00:01.120 UTC"]
    levels = selected(memory, namespace, 'group_by(.level) | map({(.[0].level // "none"): length}) | add')
    assert levels == [{"LOG": 10, "ERROR": 1, "FATAL": 1, "none": 3}]  # DETAIL and STATEMENT: parts, not levels
    assert selected(memory, namespace, 'map(select(.app == "loader" and .level == "LOG")) | length') == [4]
    assert selected(memory, namespace, ".[5].message") == [
        "[4120] loader@shop app=loader statement: CREATE ROLE reporter LOGIN"
    ]
    titles = [e.title for e in memory.outline(namespace, 0)]
    assert "15 lines, 2026-11-30 08:00:01.120 UTC to 2026-11-30 08:00:09.001 UTC" in titles
    assert not [t for t in titles if re.match(r"[\d,]+x UTC", t)], titles  # the templates start past the zone


def test_a_git_logs_passages_hold_whole_commits_header_message_and_stat(memory: TaskMemory) -> None:
    """A `git log --stat` was cut as prose, in paragraphs packed up to a size: a passage could end after one
    commit's `Author` and `Date` and the next begin with its message, so "when was X done, and by whom" found a
    passage holding half of the answer. Its commits start at the lines the records are read from, and each that
    fits is one passage, or one of several whole ones."""

    def commit(n: int, files: int) -> str:
        stat = "".join(f" src/area_{n}/part_{k}.py | {k + 2} ++\n" for k in range(files))
        return (
            f"commit {n:040x}\nAuthor: Writer {n} <writer{n}@example.org>\n"
            f"Date:   Mon Nov {n % 28 + 1} 18:02:11 2026 +0100\n\n"
            f"    Change {n}: rework area {n} ({'quux' if n == 41 else 'misc'})\n\n{stat}"
            f" {files} files changed, {files * 2} insertions(+)\n"
        )

    history = "\n".join(commit(n, 1 + (n * 7) % 9) for n in range(80))
    namespace = memory.store([TextArtifact(value=history)], tool="git.log").namespace
    memory.text.wait_chunked(None, 60)  # type: ignore[attr-defined]
    hits, _ = memory.query("When was quux reworked, and by whom?", namespace, 1, mode="lexical")
    assert hits, "the words' search found nothing"
    passage = hits[0].text
    for part in ("Author: Writer 41 <", "Date:   Mon Nov 14 ", "(quux)", " src/area_41/part_0.py", "9 files changed"):
        assert part in passage, f"{part!r} is not in the passage:\n{passage}"
    every = memory.query("rework area files changed", namespace, 200, mode="lexical")[0]
    assert all(hit.text.lstrip("\n").startswith("commit ") for hit in every), [
        hit.text[:60] for hit in every if not hit.text.lstrip("\n").startswith("commit ")
    ]


def _history(count: int, *, newest_first: bool = True) -> str:
    """A `git log --stat` of `count` commits a day apart, each touching a file or two."""

    def commit(n: int) -> str:
        subject = "Add the tokenizer and its tests" if n == 0 else f"Tidy module {n} and its docstrings"
        return (
            f"commit {n + 7:040x}\nAuthor: Writer {n} <writer{n}@example.org>\n"
            f"Date:   {(datetime(2021, 3, 1) + timedelta(days=n)):%a %b %d %H:%M:%S %Y} +0000\n\n    {subject}\n\n"
            f" src/mod_{n}.py | {n % 5 + 1} +\n 1 file changed, {n % 5 + 1} insertions(+)\n"
        )

    order = range(count - 1, -1, -1) if newest_first else range(count)
    return "\n".join(commit(n) for n in order)


def test_the_very_first_commit_of_a_history_is_found_by_asking_for_it(memory: TaskMemory) -> None:
    """A history lists its newest commit first: nothing in the oldest commit's words says it is the first one, so
    "who made the very first commit" found a commit that shares a word with the question. The chunk that holds it
    is named the oldest of the commits by date, and so is the newest."""
    namespace = memory.store([TextArtifact(value=_history(120))], tool="git.log").namespace
    memory.text.wait_indexed(120)  # type: ignore[attr-defined]
    for question, holds in [
        ("Who made the very first commit of the project, and what did it add?", "Author: Writer 0 <"),
        ("What is the most recent commit in the history?", "Author: Writer 119 <"),
    ]:
        hits, _ = memory.query(question, namespace, 1)
        assert hits, question
        assert holds in hits[0].text, (question, hits[0].text)


def test_a_history_in_oldest_first_order_names_its_first_commit_the_oldest() -> None:
    """`git log --reverse`: the dates, not the place in the text, say which end is the oldest."""
    found = records.record_starts(_history(30, newest_first=False))
    assert found is not None
    assert len(found.offsets) == 30
    assert found.first.startswith("the oldest of the 30 commits"), found.first
    assert found.last.startswith("the newest of the 30 commits"), found.last


def test_a_log_whose_events_take_a_line_or_two_keeps_its_overlapping_windows() -> None:
    """Cut along its events, a log with a detail line under every other one would lose the windows that let a
    line be read with the lines around it on either side; only records of several lines each are cut so."""
    log = "".join(
        f"2026-11-30 08:{n // 60 % 60:02d}:{n % 60:02d},123 INFO job {n} done\n" + ("  detail: q=1\n" if n % 2 else "")
        for n in range(600)
    )
    chunks = chunking.chunk(log.encode(), records=records.record_starts(log))
    holding = [c for c in chunks if b"job 300 done" in log.encode()[c.start : c.end]]
    assert len(holding) == 2, [(c.start, c.end) for c in holding]
