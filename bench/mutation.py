"""Mutation testing of the modules where a silent bug costs most, each against the tests that cover it.

    python -m bench.mutation                      # every module, this tree's tests
    python -m bench.mutation --only policy tokens # some modules
    python -m bench.mutation --tests-from main    # the tests of another commit (a "before" figure)
    python -m bench.mutation --every 5            # a 1-in-5 sample of the mutants (by mutant number)

mutmut (3.x) mutates one module at a time in a scratch copy under $TMPDIR: `server/` is copied as `src/`
(mutmut puts `mutants/src` first on the path and names mutants after the import path) and PYTHONPATH points
there too, so `offprompt serve` subprocesses started by a test run the mutant as well (mutmut's
MUTANT_UNDER_TEST is inherited). mutmut picks, per mutant, the tests that called the mutated function in
process while it collected its stats; a function reached only in a subprocess has "no tests" (counted as
survived here: no test would notice it). It runs niced with one child: the machine is shared.

Writes bench/results/mutation-<label>.json and prints one table row per module: mutants, killed, equivalent
(listed with the reason in bench/mutation-equivalents.md), survived, score = (killed + equivalent) / mutants.
Not run in CI: it takes minutes per module.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
EQUIVALENTS = REPO / "bench" / "mutation-equivalents.md"
MUTMUT = Path(sys.executable).with_name("mutmut")
DOCS = "bench/retrieval/data"  # the test texts and their licences
PYTEST_ARGS = ["-p", "no:cacheprovider", "-q", "-x"]
TEST_SUPPORT = ["tests/__init__.py", "tests/conftest.py", "tests/support.py", "tests/serving.py", "tests/servers"]


@dataclass(frozen=True)
class Target:
    module: str  # under server/offprompt/
    tests: tuple[str, ...]  # the test files that cover it
    functions: tuple[str, ...] = ("*",)  # mutant-name globs: the functions that matter, where a module is large
    keyword: str = ""  # a pytest -k expression: leaves out slow tests that only repeat in a subprocess what others do


TARGETS: dict[str, Target] = {
    "policy": Target("policy.py", ("tests/test_policy.py", "tests/test_results.py")),
    "results": Target("results.py", ("tests/test_results.py",)),
    "tokens": Target(
        "tokens.py",
        ("tests/test_tokens.py",),
        # Both start a fresh interpreter (~5 s each, per mutant); the in-process loading test covers the same code.
        keyword="not load_offline_from_the_packaged_files and not later_process_reads_the_prepared_table",
    ),
    # memory_select and memory_outline are tested in their own files (in process too).
    "tools": Target(
        "tools.py",
        (
            "tests/test_memory_tools.py",
            "tests/test_memory_select.py",
            "tests/test_line_reads.py",
            "tests/test_tool_limits.py",
            "tests/test_tool_answers.py",
        ),
        # That one gives jq 6 s of wall time: niced on a loaded machine it fails the clean run.
        keyword="not each_limit_stops_the_expression",
    ),
    "task_memory": Target(
        "memory/task_memory.py",
        (
            "tests/test_memory_tools.py",
            "tests/memory/test_persistence.py",
            "tests/memory/test_quota.py",
            "tests/memory/test_outline.py",
            "tests/test_line_reads.py",
            "tests/test_memory_select.py",
            "tests/proxy/test_intent.py",
            "tests/cli/test_memory_commands.py",
            "tests/memory/test_answer_windows.py",
            "tests/memory/test_store_and_load.py",
            "tests/memory/test_retrieval.py",
        ),
        ("*TaskMemory*", "*_copy_of*"),
        # The first two take ~15 s each per mutant and cover what the ranking tests of the eval cover.
        keyword="not each_limit_stops_the_expression and not identifier_finds_its_chunk_first"
        " and not stored_after_a_huge_one",
    ),
    "http guard": Target(
        "serve/http.py",
        ("tests/serve/test_transports.py",),
        (
            "*RequestGuard*",
            "*owner_id*",
            "*parse_tokens*",
            "*is_loopback*",
            "*_host_name*",
            "*_origin_host*",
            "*_normal_host*",
        ),
        # In process only: the guard in an `offprompt serve` subprocess is invisible to mutmut's test selection.
        keyword="guard or tokens_come_as_a_comma_list or bad_settings_say_what_to_do",
    ),
    "fastlane routing": Target(
        "serve/fastlane.py",
        # In process only: under mutmut, sys.stderr is closed, so the SDK's stdio_client cannot start a subprocess.
        ("tests/serve/test_fastlane_routing.py",),
        ("*FastLane*route*", "*tool_name*"),
    ),
}

#: mutmut's verdicts, grouped as the table counts them.
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
SURVIVED = {"survived", "no tests", "suspicious"}


def sample_globs(functions: tuple[str, ...], every: int) -> list[str]:
    """Mutant-name globs; with `every` > 1, those whose number ends in the digits of a 1-in-`every` sample."""
    digits = {1: "", 2: "[02468]", 5: "[05]", 10: "[0]"}[every]
    return [f"offprompt.*{f}__mutmut_*{digits}" if digits else f"offprompt.*{f}" for f in functions]


def equivalents() -> dict[str, str]:
    """Mutants named as equivalent in bench/mutation-equivalents.md: `- `name`: reason` lines."""
    if not EQUIVALENTS.exists():
        return {}
    found = re.findall(r"^- `([^`]+)`: (.+)$", EQUIVALENTS.read_text(), flags=re.MULTILINE)
    return dict(found)


def scratch_copy(target: Target, tests_from: str | None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="offprompt-mutation-"))
    shutil.copytree(REPO / "server", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    if tests_from:
        archive = subprocess.run(["git", "archive", tests_from, "tests"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    else:
        shutil.copytree(REPO / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    # The test texts (tests/support.py's DOCS) and their licences; mutmut copies them into mutants/ with the tests.
    shutil.copytree(REPO / DOCS, root / DOCS)
    shutil.copy(REPO / "README.md", root / "README.md")  # the outline tests read its headings
    tests = [t for t in target.tests if (root / t).exists()]
    config = (REPO / "pyproject.toml").read_text()
    config += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f'also_copy = ["{DOCS}", "README.md"]\n'
        f'only_mutate = ["src/offprompt/{target.module}"]\n'
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        f"pytest_add_cli_args = {json.dumps(PYTEST_ARGS + (['-k', target.keyword] if target.keyword else []))}\n"
        # Workers fork from a clean server, not from the process that ran the suite: onnxruntime's and the
        # tokenizer's thread pools do not survive a fork, and a worker stuck on them was counted as a timeout (killed).
        'process_isolation = "forkserver"\n'
        'forkserver_warmup = "none"\n'
    )
    (root / "pyproject.toml").write_text(config)
    with open(root / "tests" / "conftest.py", "a", encoding="utf-8") as conftest:
        # mutmut runs pytest with sys.stderr closed; a test that starts a subprocess on it needs the real one.
        conftest.write(
            "\n\n@pytest.fixture(autouse=True)\ndef _real_stderr(monkeypatch: pytest.MonkeyPatch) -> None:\n"
            "    import sys\n\n    import mcp.client.stdio\n\n    monkeypatch.setattr(sys, 'stderr', sys.__stderr__)\n"
            # The SDK's stdio_client took sys.stderr as its errlog default when it was imported.
            "    monkeypatch.setattr(mcp.client.stdio.stdio_client.__wrapped__, '__defaults__', (sys.__stderr__,))\n"
        )
    (root / "mutants" / "src").mkdir(parents=True)  # exists before Python starts, so PYTHONPATH finds it
    return root


def run_target(
    name: str, target: Target, tests_from: str | None, every: int, only: list[str] | None = None
) -> dict[str, object]:
    root = scratch_copy(target, tests_from)
    selection = re.findall(r"pytest_add_cli_args_test_selection = (.*)", (root / "pyproject.toml").read_text())
    if not json.loads(selection[-1]):
        shutil.rmtree(root, ignore_errors=True)  # with no test file mutmut would run the whole suite
        return {"module": f"server/offprompt/{target.module}", "mutants": 0, "note": "no test file covers it"}
    env = {**os.environ, "PYTHONPATH": str(root / "mutants" / "src"), "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    chosen = only if only is not None else sample_globs(target.functions, every)
    command = ["nice", "-n", "19", str(MUTMUT), "run", "--max-children", "1", *chosen]
    log_path = Path(tempfile.gettempdir()) / f"offprompt-mutation-{name.replace(' ', '-')}.log"
    with open(log_path, "w", encoding="utf-8") as log:  # mutmut's own output: why a run failed, if it did
        subprocess.run(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    listed = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], cwd=root, env=env, capture_output=True, text=True, check=False
    ).stdout
    verdicts = {
        mutant: verdict
        for mutant, verdict in re.findall(r"^\s+(offprompt\.\S+): (.+)$", listed, flags=re.MULTILINE)
        if verdict.strip() != "not checked"  # outside the sample, or the run stopped: not counted either way
    }
    named = equivalents()
    equivalent = sorted(m for m, v in verdicts.items() if v.strip() in SURVIVED and m in named)
    survived = sorted(m for m, v in verdicts.items() if v.strip() in SURVIVED and m not in named)
    killed = [m for m, v in verdicts.items() if v.strip() in KILLED]
    diffs = {  # what each one changed, to kill it with a test or name it equivalent
        mutant: "\n".join(line for line in shown.splitlines() if line[:1] in "+-@" and line[:3] not in "---+++")
        for mutant, shown in mutant_diffs(root, env, survived + equivalent).items()
    }
    shutil.rmtree(root, ignore_errors=True)
    total = len(verdicts)
    return {
        "module": f"server/offprompt/{target.module}",
        "functions": list(target.functions),
        "tests": list(target.tests),
        "sample": f"1 in {every}" if every > 1 else "all",
        "mutants": total,
        "killed": len(killed),
        "equivalent": len(equivalent),
        "survived": len(survived),
        "score": round((len(killed) + len(equivalent)) / total, 3) if total else None,
        "survivors": {m: diffs.get(m, "") for m in survived},
        "equivalents": {m: named[m] for m in equivalent},
        "verdicts": {v: sum(1 for x in verdicts.values() if x.strip() == v) for v in sorted(set(verdicts.values()))},
        "seconds": round(time.monotonic() - started),
    }


#: `mutmut show` for many mutants in one process (a process per mutant costs ~1.5 s each: minutes per module).
_SHOW = """
import json, sys
from mutmut.__main__ import find_mutant
from mutmut.mutation.diff_apply import get_diff_for_mutant
print(json.dumps({n: get_diff_for_mutant(n, path=find_mutant(n).path) for n in json.load(sys.stdin)}))
"""


def mutant_diffs(root: Path, env: dict[str, str], mutants: list[str]) -> dict[str, str]:
    if not mutants:
        return {}
    shown = subprocess.run(
        [sys.executable, "-c", _SHOW], cwd=root, env=env, input=json.dumps(mutants), capture_output=True, text=True
    )
    return dict(json.loads(shown.stdout)) if shown.returncode == 0 else {}


def recheck(name: str, last: dict[str, Any], tests_from: str | None) -> dict[str, Any]:
    """The last run's row with its survivors run again: those the tests now kill move to killed."""
    left = sorted(set(last.get("survivors", {})) | set(last.get("equivalents", {})))
    if not left:
        return last
    again = run_target(name, TARGETS[name], tests_from, 1, only=left)
    killed = int(last["killed"]) + int(again["killed"])  # type: ignore[call-overload]
    equivalent, survived = int(again["equivalent"]), int(again["survived"])  # type: ignore[call-overload]
    total = int(last["mutants"])
    return {
        **last,
        "killed": killed,
        "equivalent": equivalent,
        "survived": survived,
        "score": round((killed + equivalent) / total, 3) if total else None,
        "survivors": again["survivors"],
        "equivalents": again["equivalents"],
        "rechecked": len(left),
        "seconds": int(last.get("seconds", 0)) + int(again["seconds"]),  # type: ignore[call-overload]
    }


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return found.stdout.strip()


#: The page that holds the before/after table, between these markers.
TABLE_PAGE = REPO / "CONTRIBUTING.md"
TABLE_START, TABLE_END = "<!-- mutation-table:start -->", "<!-- mutation-table:end -->"


def with_table(text: str, table: str) -> str:
    """`text` with the block between the table markers replaced by `table`."""
    before, rest = text.split(TABLE_START, 1)
    return f"{before}{TABLE_START}\n{table}\n{TABLE_END}{rest.split(TABLE_END, 1)[1]}"


def markdown_table() -> str:
    """The table of CONTRIBUTING.md: each module before (the tests of `--tests-from`) and after (this tree's tests)."""
    runs = {}
    for label in ("before", "after"):
        path = RESULTS / f"mutation-{label}.json"
        runs[label] = json.loads(path.read_text())["modules"] if path.exists() else {}
    lines = [
        "| module (functions) | sample | before: mutants / killed / equivalent / survived | score | "
        "after: mutants / killed / equivalent / survived | score |",
        "| --- | --- | --- | ---: | --- | ---: |",
    ]

    named = equivalents()

    def cells(row: dict[str, Any] | None) -> str:
        if not row:
            return "not run | —"
        if "note" in row:
            return f"{row['note']} | 0%"
        # Scored again against today's list of equivalents: one named since the run counts, one removed doesn't.
        left = set(row.get("survivors", {})) | set(row.get("equivalents", {}))
        equivalent = len(left & set(named))
        survived = len(left) - equivalent
        total = int(row["mutants"])
        shown = f"{(int(row['killed']) + equivalent) / total:.0%}" if total else "—"
        return f"{total} / {row['killed']} / {equivalent} / {survived} | {shown}"

    for name, target in TARGETS.items():
        before, after = runs["before"].get(name), runs["after"].get(name)
        if not before and not after:
            continue
        where = target.module + ("" if target.functions == ("*",) else f" ({', '.join(target.functions)})")
        samples = [str(row.get("sample", "all")) for row in (before, after) if row and "note" not in row]
        sample = samples[0] if len(set(samples)) <= 1 else f"before {samples[0]}, after {samples[1]}"
        lines.append(f"| {where} | {sample} | {cells(before)} | {cells(after)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(TARGETS), help="modules to mutate (default: all)")
    parser.add_argument("--tests-from", help="run the tests of this git revision instead of this tree's")
    parser.add_argument("--every", type=int, default=1, choices=[1, 2, 5, 10], help="mutate a 1-in-N sample")
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="run again only the mutants that survived in the label's last run (after new tests), and update it",
    )
    parser.add_argument("--label", default="latest", help="results go to bench/results/mutation-LABEL.json")
    parser.add_argument("--table", action="store_true", help="print the before/after Markdown table and exit")
    parser.add_argument(
        "--write-table", action="store_true", help="write that table into CONTRIBUTING.md's mutation testing section"
    )
    args = parser.parse_args()
    if args.table:
        print(markdown_table())
        return
    if args.write_table:
        text = TABLE_PAGE.read_text(encoding="utf-8")
        TABLE_PAGE.write_text(with_table(text, markdown_table()), encoding="utf-8")
        return
    out = RESULTS / f"mutation-{args.label}.json"
    report = json.loads(out.read_text()) if out.exists() else {}
    report.update({"commit": commit(), "tests_from": args.tests_from or "this tree", "every": args.every})
    modules = report.setdefault("modules", {})
    for name in args.only or list(TARGETS):
        if args.survivors:
            row = recheck(name, modules[name], args.tests_from)
        else:
            row = run_target(name, TARGETS[name], args.tests_from, args.every)
        modules[name] = row
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        if "note" in row:
            print(f"{name:18} {row['note']}", flush=True)
            continue
        print(
            f"{name:18} {row['mutants']:>5} mutants {row['killed']:>5} killed {row['equivalent']:>4} equivalent "
            f"{row['survived']:>4} survived  score {row['score']}  ({row['seconds']} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
