"""12. Wide text: a result of one long line without white space costs what as long a text of lines costs.

Issue 36: 16 MiB of `zzz…` from a downstream took 67 s and 1.96 GiB to store (16 MiB of ordinary lines: 8.4 s,
300 MiB), and held the event loop meanwhile. Each store here runs in a fresh process (`bench.probe wide-store`)
through the result boundary (the secrets prefilter, the policy's count, `TaskMemory.store`), the two kinds in
turn: one line of `zzz…` and the bench's mixed text (code, prose, logs, JSON) of the same size. The figures are
ratios of the wide line to the lines: seconds to the reference and peak resident memory by then (the indexer
held), then seconds from the reference until searchable by words (chunked and in the lexical index).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from bench.context import REPO, Context
from bench.report import Row, SectionResult, check

NAME = "wide"
TITLE = "12. Wide text"
#: Issue 36: store time and peak memory of 16 MiB with and without white space within 1.5x of each other.
TARGET_RATIO = 1.5
KINDS = ("wide", "lines")


def _probe(ctx: Context, kind: str, mebibytes: int, run: int) -> dict[str, Any]:
    directory = ctx.workdir / f"wide-{kind}-{run}"
    out = subprocess.run(
        [sys.executable, "-m", "bench.probe", "wide-store", str(directory), kind, str(mebibytes)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    mebibytes = ctx.pick(16, 4)
    runs = ctx.pick(3, 1)
    samples: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for run_index in range(runs):  # in turn: drift in the machine's load hits both kinds alike
        for kind in KINDS:
            ctx.log(f"wide: {mebibytes} MiB {kind}, run {run_index + 1} of {runs}")
            samples[kind].append(_probe(ctx, kind, mebibytes, run_index))
    median = {
        kind: {key: statistics.median(s[key] for s in samples[kind]) for key in samples[kind][0] if key != "kind"}
        for kind in KINDS
    }
    wide, lines = median["wide"], median["lines"]
    for key, label in (("reference_s", "to the reference"), ("peak_rss", "peak resident memory")):
        res.rows.append(
            check(
                f"{mebibytes} MiB in one line without white space vs in lines, {label}",
                wide[key] / lines[key],
                "x",
                at_most=TARGET_RATIO,
                target=f"≤ {TARGET_RATIO}x",
                note=_note(key, wide, lines),
            )
        )
    res.rows.append(
        Row(
            f"{mebibytes} MiB in one line without white space vs in lines, then until searchable by words",
            wide["words_s"] / lines["words_s"],
            "x",
            note=f"{wide['words_s']:.1f} s vs {lines['words_s']:.1f} s",
        )
    )
    res.data["samples"] = samples
    res.notes.append(
        f"Medians of {runs} fresh process(es) per kind, run in turn; each store goes through the result boundary "
        "(secrets prefilter, policy, TaskMemory.store, the outline for the reference). Peak memory is the whole "
        "process's (imports and the result's own text included)."
    )
    return res


def _note(key: str, wide: dict[str, float], lines: dict[str, float]) -> str:
    if key == "peak_rss":
        mib = 1 << 20
        return f"{wide[key] / mib:.0f} MiB vs {lines[key] / mib:.0f} MiB ({wide['before'] / mib:.0f} before the result)"
    return f"{wide[key]:.2f} s vs {lines[key]:.2f} s"
