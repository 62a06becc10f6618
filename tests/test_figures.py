"""The figures check lists a results file as possibly stale only when code it measures changed since its run.

Each case is a throw-away git repository laid out as this one is (server/offprompt, bench/, bench/results):
a results file is stamped at one commit, a later commit changes one file, and the check says whether the
file's figures may be stale, naming the changed file it measures.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench import figures

#: A package and benches in the shapes this repository's have: `python -m bench` dispatching to its sections by
#: name, a section starting the server as a subprocess (`-m offprompt`, as bench/peers.py does), and the
#: retrieval eval run as a script that reads one question set of its data directory.
TREE = {
    "server/offprompt/__init__.py": "",
    "server/offprompt/__main__.py": "from offprompt.launch import main\n\nraise SystemExit(main())\n",
    "server/offprompt/launch.py": "from offprompt.ranking import rank\n\n\ndef main() -> int:\n    return 0\n",
    "server/offprompt/ranking.py": "rank = sorted\n",
    "server/offprompt/store.py": (
        "from typing import TYPE_CHECKING\n\nfrom .tokens import count\n\n"
        "if TYPE_CHECKING:\n    from .ranking import rank\n"
    ),
    "server/offprompt/tokens.py": "count = len\n",
    "server/offprompt/data/opening.json": "{}\n",
    "bench/__init__.py": "",
    "bench/__main__.py": "from bench.run import main\n\nmain()\n",
    "bench/run.py": 'import importlib\n\n\ndef main() -> None:\n    importlib.import_module("bench.sections.x")\n',
    "bench/sections/__init__.py": "",
    "bench/sections/store.py": "from offprompt.store import count\n",
    "bench/sections/serve.py": 'import sys\n\nCOMMAND = [sys.executable, "-m", "offprompt", "serve"]\n',
    "bench/retrieval/eval.py": 'import generated\n\nimport bench\n\nDATA = "data"\n',
    "bench/retrieval/generated.py": "",
    "bench/retrieval/data/frozen/qa-a.jsonl": "{}\n",
    "bench/retrieval/data/frozen-2/qa-a.jsonl": "{}\n",
}
COMMANDS = {
    "store": "python -m bench --only store",
    "serve": "python -m bench --only serve",
    "frozen": "python bench/retrieval/eval.py --set frozen --out /tmp/retrieval-frozen.json",
}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "--short=7", "HEAD")


def _measured(tmp_path: Path, commit_suffix: str = "") -> Path:
    """The tree committed, then a results file per command stamped with that commit (committed after the
    run, as a run's file is)."""
    _git(tmp_path, "init", "-q")
    commit = _commit(tmp_path, TREE, "the code measured")
    stamped = {
        f"bench/results/{name}.json": json.dumps({"command": command, "commit": commit + commit_suffix})
        for name, command in COMMANDS.items()
    }
    _commit(tmp_path, stamped, "the runs' files")
    return tmp_path


def _why(root: Path) -> dict[str, str | None]:
    """Each file judged by one check, as `python -m bench.figures --check` judges them all."""
    check = figures.Staleness(root)
    return {name: figures.staleness(f"bench/results/{name}.json", root, check) for name in COMMANDS}


def test_a_change_to_code_a_file_does_not_import_leaves_it_current(tmp_path: Path) -> None:
    root = _measured(tmp_path)
    assert _why(root) == {"store": None, "serve": None, "frozen": None}
    _commit(root, {"server/offprompt/ranking.py": "rank = reversed\n"}, "ranking changed")
    why = _why(root)
    assert why["store"] is None  # the store section imports tokens; ranking only for the type checker
    assert why["frozen"] is None
    assert "server/offprompt/ranking.py" in (why["serve"] or "")  # `python -m offprompt` runs it


def test_a_change_to_a_module_a_file_imports_makes_it_stale_and_is_named(tmp_path: Path) -> None:
    root = _measured(tmp_path)
    _commit(root, {"server/offprompt/tokens.py": "count = sum\n"}, "tokens changed")
    why = _why(root)
    assert "server/offprompt/tokens.py changed (imported by server/offprompt/store.py" in (why["store"] or "")
    assert why["serve"] is None  # the server's entry point does not import tokens
    assert why["frozen"] is None


def test_a_section_is_judged_by_its_own_module_not_every_sections(tmp_path: Path) -> None:
    root = _measured(tmp_path)
    _commit(root, {"bench/sections/serve.py": 'COMMAND = ["offprompt", "serve"]\n'}, "the serve section changed")
    why = _why(root)
    assert why["store"] is None
    assert "bench/sections/serve.py" in (why["serve"] or "")


def test_only_the_question_set_a_run_reads_counts(tmp_path: Path) -> None:
    root = _measured(tmp_path)
    _commit(root, {"bench/retrieval/data/frozen-2/qa-a.jsonl": '{"q": 1}\n'}, "another set's questions")
    assert _why(root)["frozen"] is None
    _commit(root, {"bench/retrieval/generated.py": "QUESTIONS = []\n"}, "a sibling module the script imports")
    assert "bench/retrieval/generated.py" in (_why(root)["frozen"] or "")


def test_the_set_a_run_reads_makes_it_stale(tmp_path: Path) -> None:
    root = _measured(tmp_path)
    _commit(root, {"bench/retrieval/data/frozen/qa-a.jsonl": '{"q": 2}\n'}, "its set's questions")
    assert "bench/retrieval/data/frozen/qa-a.jsonl" in (_why(root)["frozen"] or "")


def test_a_dirty_tree_or_no_stamp_stays_listed(tmp_path: Path) -> None:
    root = _measured(tmp_path, "+dirty")
    assert all("uncommitted changes" in (why or "") for why in _why(root).values())
    (root / "bench/results/bare.json").write_text(json.dumps({"rows": []}))
    assert figures.staleness("bench/results/bare.json", root) == "no commit stamped"
    (root / "bench/results/no_command.json").write_text(json.dumps({"commit": _git(root, "rev-parse", "HEAD~1")}))
    _commit(root, {"server/offprompt/ranking.py": "rank = reversed\n"}, "ranking changed")
    assert "no command stamped" in (figures.staleness("bench/results/no_command.json", root) or "")


def test_a_table_kept_as_its_run_is_listed_apart_never_stale(tmp_path: Path) -> None:
    """A run-once set's table is the record of that run: a later change to what it measured does not make it
    stale (re-running it would give a tuned figure, another thing), and the check says which run it keeps."""
    root = _measured(tmp_path)
    run_at = _git(root, "rev-parse", "--short=7", "HEAD~1")
    page = (
        "<!-- figures: bench/results/frozen.json as-run -->\n<!-- /figures -->\n\n"
        "<!-- figures: bench/results/store.json -->\n<!-- /figures -->\n"
    )
    _commit(root, {"docs/figures.md": page}, "a page reads both")
    _commit(root, {"bench/retrieval/generated.py": "Q = []\n", "server/offprompt/tokens.py": "count = sum\n"}, "both")
    listed = figures.stale(root)
    assert [line.split(":")[0] for line in listed] == ["bench/results/store.json"]
    assert figures.kept_as_run(root) == [f"bench/results/frozen.json: run at {run_at}"]
