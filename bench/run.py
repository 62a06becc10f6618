"""`python -m bench [--quick] [--only A,B] [--skip A,B]`: run the sections, print the table, write the JSON.

A full run writes `bench/results/latest.json` (and the growth plot beside it);
`--quick` or a selection writes `latest-quick.json` or `latest-<sections>.json`
instead, so a partial run never overwrites the full one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType

from bench.context import REPO, Context
from bench.report import SectionResult, machine, table, write_json

# Table order follows the items; run order puts `store` first, since it computes
# the real chunk vectors the others reuse.
SECTIONS = [
    "passthrough", "store", "fresh_query", "readback", "tokens", "startup", "growth", "secrets", "select", "soak",
    "pass_on", "http_cost", "wide", "opening",
]  # fmt: skip
RUN_ORDER = [
    "store", "fresh_query", "readback", "growth", "tokens", "startup", "passthrough", "secrets", "select", "soak",
    "pass_on", "http_cost", "wide", "opening",
]  # fmt: skip
RESULTS = REPO / "bench" / "results"


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"bench.sections.{name}")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (a few minutes)")
    parser.add_argument("--only", default="", help=f"comma-separated sections: {','.join(SECTIONS)}")
    parser.add_argument("--skip", default="", help="comma-separated sections to leave out")
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    return parser.parse_args(argv)


#: The stop signals a section sends the servers it starts (startup, opening).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def stops_at_their_defaults() -> None:
    """The servers a section starts get the stop signals at their defaults, as a client starts them. A signal
    ignored here would be inherited (a shell's background job ignores SIGINT and SIGQUIT; nohup, SIGHUP), and a
    server that keeps an ignored stop signal ignored, as offprompt and the SDK's servers do, would not stop."""
    for stop in STOP_SIGNALS:
        if signal.getsignal(stop) == signal.SIG_IGN:
            signal.signal(stop, signal.default_int_handler if stop == signal.SIGINT else signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    stops_at_their_defaults()
    args = _parse(argv)
    only = [s for s in args.only.split(",") if s]
    skip = {s for s in args.skip.split(",") if s}
    unknown = (set(only) | skip) - set(SECTIONS)
    if unknown:
        print(f"unknown sections: {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    chosen = [s for s in RUN_ORDER if (not only or s in only) and s not in skip]
    partial = bool(only or skip)
    out = args.out or RESULTS / (
        "latest-quick.json"
        if args.quick and not partial
        else f"latest-{'-'.join(chosen)}{'-quick' if args.quick else ''}.json"
        if partial
        else "latest.json"
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = "python -m bench" + ("" if argv is None and len(sys.argv) == 1 else " " + shlex.join(sys.argv[1:]))
    meta = machine()
    print(
        f"bench: {', '.join(chosen)} on {meta['cores']} cores, {meta['memory_gib']} GiB, {meta['cpu']}", file=sys.stderr
    )

    workdir = Path(tempfile.mkdtemp(prefix="offprompt-bench-"))
    ctx = Context(quick=args.quick, workdir=workdir, results_dir=RESULTS if not partial else workdir)
    ctx.results_dir = RESULTS
    ctx.cache["plot_name"] = out.with_suffix(".png").name.replace("latest", "growth")
    results: dict[str, SectionResult] = {}
    started = time.perf_counter()
    try:
        for name in chosen:
            module = _module(name)
            ctx.log(f"== {module.TITLE}")
            t0 = time.perf_counter()
            try:
                result: SectionResult = module.run(ctx)
            except Exception:
                traceback.print_exc()
                result = SectionResult(name, module.TITLE, error=traceback.format_exc(limit=3).strip().splitlines()[-1])
            result.seconds = time.perf_counter() - t0
            results[name] = result
            ctx.log(f"== {module.TITLE} done in {result.seconds:.0f} s")
    finally:
        if args.keep:
            print(f"scratch directory kept: {workdir}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    ordered = [results[s] for s in SECTIONS if s in results]
    meta["seconds"] = round(time.perf_counter() - started, 1)
    write_json(out, command, meta, ordered)
    print(table(ordered))
    for r in ordered:
        for note in r.notes:
            print(f"- {r.title}: {note}")
    print(f"\n{command}: {meta['seconds']:.0f} s on {meta['cores']} cores, {meta['memory_gib']} GiB; wrote {out}")
    return 1 if any(r.error for r in ordered) else 0
