"""The detection figures docs/secrets.md states, measured on the two corpora.

    PYTHONPATH=server python -m tests.secrets.figures

A secret counts as caught when a finding covers its value (so it would not reach the model), whatever kind the
finding names; a look-alike output counts as a false alarm when anything in it is found.
"""

from __future__ import annotations

from dataclasses import dataclass

from offprompt.secrets import find_secrets
from tests.secrets.corpus import LOOKALIKES, SECRETS, Case
from tests.secrets.heldout import HELD_OUT_LOOKALIKES, HELD_OUT_SECRETS


@dataclass(frozen=True)
class Figures:
    caught: int
    secrets: int
    outputs: int
    kinds: int
    false_alarms: int
    lookalikes: int
    missed: tuple[str, ...]  # the outputs with a secret left in
    flagged: tuple[str, ...]  # the look-alike outputs with a finding


def measure(secrets: tuple[Case, ...], lookalikes: tuple[Case, ...]) -> Figures:
    caught = 0
    missed: list[str] = []
    for case in secrets:
        found = [finding.value for finding in find_secrets(case.text)]
        hits = sum(any(value in finding for finding in found) for _, value in case.secrets)
        caught += hits
        if hits < len(case.secrets):
            missed.append(case.name)
    flagged = tuple(case.name for case in lookalikes if find_secrets(case.text))
    return Figures(
        caught=caught,
        secrets=sum(len(case.secrets) for case in secrets),
        outputs=len(secrets),
        kinds=len({kind for case in secrets for kind, _ in case.secrets}),
        false_alarms=len(flagged),
        lookalikes=len(lookalikes),
        missed=tuple(missed),
        flagged=flagged,
    )


def tuned() -> Figures:
    return measure(SECRETS, LOOKALIKES)


def held_out() -> Figures:
    return measure(HELD_OUT_SECRETS, HELD_OUT_LOOKALIKES)


def describe(figures: Figures) -> str:
    """The figures as docs/secrets.md words them."""
    return (
        f"{figures.caught} of {figures.secrets} secrets caught across {figures.outputs} outputs and "
        f"{figures.kinds} kinds; {figures.false_alarms} false alarms on {figures.lookalikes} look-alikes"
    )


if __name__ == "__main__":
    for name, figures in (("tuned on (corpus.py)", tuned()), ("held out (heldout.py)", held_out())):
        print(f"{name}: {describe(figures)}")
        for case in figures.missed:
            print(f"  missed: {case}")
        for case in figures.flagged:
            print(f"  false alarm: {case}")
