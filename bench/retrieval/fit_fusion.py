"""Fit hybrid ranking's weights on the tuning questions, with cross-validation by document.

Reads the candidates and features features.py dumped (one JSON line per question), and ranks every question's
candidates again as the query path does: by the count of the query's identifiers a chunk names, then by the
weighted sum of its features (offprompt.memory.storage.ranking). Two ways to fit the weights:

- `pairwise` (default): a pairwise logistic loss, every strict hit against every other candidate of its question
  that names as many identifiers (the ones that name more or fewer are ordered whatever the weights), each
  question counting once, with an L2 penalty pulling towards the hand-set weights;
- `softmax`: a listwise loss, minus the log of the hits' softmax share among those candidates, each question
  counting once, with an L2 penalty;
- `ascent`: coordinate ascent on MRR@10 from the hand-set weights, each weight tried on a grid in turn.

Leave-one-document-out: for each tuning document, the weights are fitted on the others' questions and both the
fitted and the hand-set weights rank its own. The held-out figures, per fold and pooled over all questions, are
what says whether fitting helps; the weights fitted on every document are what `--write` stores.

Usage: .venv/bin/python bench/retrieval/fit_fusion.py FEATURES.jsonl [--method pairwise|softmax|ascent]
       [--features lexical,dense,...] [--json RESULT] [--write server/offprompt/data/fusion_weights.json]
       [--apply WEIGHTS.json OTHER.jsonl]   (no fit: the hand-set weights and the file's on another set's dump)
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from offprompt.memory.storage.ranking import FEATURES, HAND_SET

TOP_K = 10
#: Above any score: a chunk naming more of the query's identifiers ranks first whatever its features.
NAMED_STEP = 1e6
#: The L2 penalty of the pairwise fit, towards the hand-set weights.
PENALTY = 0.01
#: The values coordinate ascent tries for each weight.
GRID = np.round(np.arange(-0.5, 1.55, 0.05), 2)


@dataclass(frozen=True)
class Question:
    id: str
    doc: str
    kind: str
    features: NDArray[np.float64]  # a row per candidate, a column per feature
    named: NDArray[np.float64]
    strict: NDArray[np.bool_]


def load(path: Path, names: Sequence[str]) -> list[Question]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        columns = [row["features"].index(name) for name in names]
        cands = row["candidates"]
        out.append(
            Question(
                row["id"],
                row["doc"],
                row["kind"],
                np.array([[c["features"][i] for i in columns] for c in cands], dtype=np.float64).reshape(
                    len(cands), len(names)
                ),
                np.array([c["named"] for c in cands], dtype=np.float64),
                np.array([c["strict"] for c in cands], dtype=np.bool_),
            )
        )
    return out


def rank(q: Question, w: NDArray[np.float64]) -> int | None:
    """The 1-based rank of the first strict hit in the top 10 as the query path orders them, None if none."""
    if not q.strict.any():
        return None
    key = q.named * NAMED_STEP + q.features @ w
    order = sorted(range(len(key)), key=lambda i: key[i], reverse=True)  # stable, as the query path's sort
    for n, i in enumerate(order[:TOP_K], start=1):
        if q.strict[i]:
            return n
    return None


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {
        "recall@1": sum(1 for r in ranks if r == 1) / n,
        "recall@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None) / n,
    }


def mrr(questions: Sequence[Question], w: NDArray[np.float64]) -> float:
    return metrics([rank(q, w) for q in questions])["mrr@10"]


def pairs(questions: Sequence[Question]) -> list[tuple[NDArray[np.float64], float]]:
    """Per question with a hit: the feature differences hit - other over the pairs the weights decide."""
    out = []
    for q in questions:
        diffs = [
            q.features[h] - q.features[o]
            for h in np.flatnonzero(q.strict)
            for o in np.flatnonzero(~q.strict)
            if q.named[h] == q.named[o]
        ]
        if diffs:
            out.append((np.array(diffs), 1.0 / len(diffs)))
    return out


def fit_pairwise(questions: Sequence[Question], start: NDArray[np.float64]) -> NDArray[np.float64]:
    """Minimise the mean over questions of the pairs' logistic loss, plus PENALTY * |w - start|², by Newton."""
    data = pairs(questions)
    if not data:
        return start.copy()
    d = np.concatenate([diffs for diffs, _ in data])
    weight = np.concatenate([np.full(len(diffs), each) for diffs, each in data]) / len(data)
    w = start.copy()
    for _ in range(50):
        margin = d @ w
        p = 1.0 / (1.0 + np.exp(np.clip(margin, -50, 50)))  # sigmoid(-margin)
        grad = -(d * (weight * p)[:, None]).sum(axis=0) + 2 * PENALTY * (w - start)
        hess = (d * (weight * p * (1 - p))[:, None]).T @ d + 2 * PENALTY * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.abs(step).max() < 1e-9:
            break
    return w


def fit_ascent(questions: Sequence[Question], start: NDArray[np.float64], passes: int = 4) -> NDArray[np.float64]:
    """Coordinate ascent on MRR@10: each weight in turn set to the grid value that scores best (ties: the
    nearest to its current value), until a pass changes nothing."""
    w = start.copy()
    best = mrr(questions, w)
    for _ in range(passes):
        changed = False
        for i in range(len(w)):
            for value in sorted(GRID, key=lambda v: abs(v - w[i])):
                trial = w.copy()
                trial[i] = value
                got = mrr(questions, trial)
                if got > best + 1e-12:
                    best, w, changed = got, trial, True
        if not changed:
            break
    return w


def fit_softmax(questions: Sequence[Question], start: NDArray[np.float64]) -> NDArray[np.float64]:
    """Minimise the mean over questions of -log(the softmax share of its strict hits among the candidates that
    name as many identifiers as its best-named hit), plus PENALTY * |w|², by gradient descent with a line search.
    Closer to R@1 than the pairs: only what outscores the hits costs much."""
    groups = []
    for q in questions:
        if q.strict.any():
            level = q.named[q.strict].max()
            same = q.named == level
            groups.append((q.features[same], q.strict[same]))
    if not groups:
        return start.copy()

    def loss_grad(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        total, grad = PENALTY * float(w @ w), 2 * PENALTY * w
        for x, hit in groups:
            s = x @ w
            top = s.max()
            p_all = np.exp(s - top)
            p_hit = p_all * hit
            total += (np.log(p_all.sum()) - np.log(p_hit.sum())) / len(groups)
            grad = grad + (x.T @ (p_all / p_all.sum()) - x.T @ (p_hit / p_hit.sum())) / len(groups)
        return total, grad

    w = start * 5.0  # the hand-set weights at a scale where the softmax tells candidates apart
    value, grad = loss_grad(w)
    step = 1.0
    for _ in range(500):
        trial = w - step * grad
        got, trial_grad = loss_grad(trial)
        if got < value:
            w, value, grad = trial, got, trial_grad
            step *= 1.5
        else:
            step /= 2
            if step < 1e-6:
                break
    return w


def fit(method: str, questions: Sequence[Question], start: NDArray[np.float64]) -> NDArray[np.float64]:
    if method == "pairwise":
        return fit_pairwise(questions, start)
    if method == "softmax":
        return fit_softmax(questions, start)
    return fit_ascent(questions, start)


def scaled(w: NDArray[np.float64], names: Sequence[str]) -> dict[str, float]:
    """The weights by name, scaled so that the dense and lexical ones add up to 1 as the hand-set ones do (the
    order they make does not change with the scale)."""
    total = sum(w[i] for i, name in enumerate(names) if name in ("lexical", "dense"))
    scale = 1 / total if total > 0 else 1.0
    return {name: round(float(w[i] * scale), 4) for i, name in enumerate(names)}


def cross_validate(method: str, questions: Sequence[Question], names: Sequence[str]) -> dict[str, Any]:
    hand = np.array([HAND_SET.get(name, 0.0) for name in names])
    folds = []
    pooled: dict[str, list[int | None]] = defaultdict(list)
    for doc in sorted({q.doc for q in questions}):
        train = [q for q in questions if q.doc != doc]
        test = [q for q in questions if q.doc == doc]
        w = fit(method, train, hand)
        ranks = {"fitted": [rank(q, w) for q in test], "hand-set": [rank(q, hand) for q in test]}
        for key, r in ranks.items():
            pooled[key].extend(r)
        folds.append(
            {
                "doc": doc,
                "kind": test[0].kind,
                "questions": len(test),
                "weights": scaled(w, names),
                **{key: metrics(r) for key, r in ranks.items()},
            }
        )
    return {"folds": folds, "pooled": {key: metrics(r) for key, r in pooled.items()}}


def applied(questions: Sequence[Question], weights: Mapping[str, float], names: Sequence[str]) -> dict[str, Any]:
    """The hand-set and the given weights on these questions, overall and per kind."""
    out: dict[str, Any] = {}
    for label, table in (("hand-set", HAND_SET), ("fitted", weights)):
        w = np.array([table.get(name, 0.0) for name in names])
        ranks = {q.id: rank(q, w) for q in questions}
        out[label] = {
            kind: metrics([ranks[q.id] for q in questions if kind in ("all", q.kind)])
            for kind in ["all", *sorted({q.kind for q in questions})]
        }
    return out


def fmt(m: Mapping[str, float]) -> str:
    return f"{m['recall@1']:.2f} / {m['recall@5']:.2f} / {m['mrr@10']:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path, nargs="?", help="features.py's output for the tuning set")
    parser.add_argument("--method", choices=("pairwise", "softmax", "ascent"), default="pairwise")
    parser.add_argument("--features", default=",".join(FEATURES), help="the features to fit, comma-separated")
    parser.add_argument("--write", type=Path, help="write the weights fitted on every document here")
    parser.add_argument("--json", type=Path, help="write the folds and the final weights here as JSON")
    parser.add_argument(
        "--apply", nargs=2, type=Path, metavar=("WEIGHTS", "DUMP"), help="no fit: compare weights on a dump"
    )
    args = parser.parse_args()
    names = [n for n in args.features.split(",") if n]
    unknown = set(names) - set(FEATURES)
    if unknown:
        parser.error(f"no such features: {', '.join(sorted(unknown))}")

    if args.apply:
        weights = json.loads(args.apply[0].read_text(encoding="utf-8"))["weights"]
        questions = load(args.apply[1], list(FEATURES))
        result = applied(questions, weights, list(FEATURES))
        print(f"{args.apply[1]}: {len(questions)} questions, strict R@1 / R@5 / MRR@10")
        for kind in result["fitted"]:
            print(f"  {kind:9s} hand-set {fmt(result['hand-set'][kind])}   fitted {fmt(result['fitted'][kind])}")
        return 0

    if args.dump is None:
        parser.error("give the tuning set's dump to fit on")
    questions = load(args.dump, names)
    cv = cross_validate(args.method, questions, names)
    print(f"{args.method} on {', '.join(names)}: leave-one-document-out, held-out strict R@1 / R@5 / MRR@10")
    print("| held-out document | questions | hand-set | fitted |\n| --- | ---: | ---: | ---: |")
    for f in cv["folds"]:
        print(f"| {Path(f['doc']).name} ({f['kind']}) | {f['questions']} | {fmt(f['hand-set'])} | {fmt(f['fitted'])} |")
    for label in ("hand-set", "fitted"):
        mean = {k: float(np.mean([f[label][k] for f in cv["folds"]])) for k in ("recall@1", "recall@5", "mrr@10")}
        cv.setdefault("mean", {})[label] = mean
    print(f"| mean of the folds | | {fmt(cv['mean']['hand-set'])} | {fmt(cv['mean']['fitted'])} |")
    print(f"| pooled | {len(questions)} | {fmt(cv['pooled']['hand-set'])} | {fmt(cv['pooled']['fitted'])} |")
    wins = sum(f["fitted"]["mrr@10"] > f["hand-set"]["mrr@10"] + 1e-12 for f in cv["folds"])
    losses = sum(f["fitted"]["mrr@10"] < f["hand-set"]["mrr@10"] - 1e-12 for f in cv["folds"])
    print(f"folds where fitted MRR@10 is higher / lower: {wins} / {losses}")

    hand = np.array([HAND_SET.get(name, 0.0) for name in names])
    final = fit(args.method, questions, hand)
    weights = scaled(final, names)
    print(f"fitted on all {len(questions)}: {weights}; in-sample {fmt(metrics([rank(q, final) for q in questions]))}")
    if args.json:
        table = {f"{Path(f['doc']).name} ({f['kind']})": f for f in cv["folds"]}
        table["mean of the folds"] = cv["mean"]
        table["all held-out questions"] = cv["pooled"]
        report = {
            "command": shlex.join(["python", "bench/retrieval/fit_fusion.py", *sys.argv[1:]]),
            "git": {
                "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
            },
            "method": args.method,
            "features": names,
            "table": table,
            "weights_fitted_on_all": weights,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.write:
        stored = {
            "about": "hybrid ranking's weights, fitted on the retrieval eval's tuning questions by "
            f"bench/retrieval/fit_fusion.py --method {args.method}",
            "method": args.method,
            "questions": len(questions),
            "documents": len({q.doc for q in questions}),
            "weights": weights,
        }
        args.write.write_text(json.dumps(stored, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
