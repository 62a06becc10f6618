"""Every finding of the secret detector on both secret corpora and on 3000 seeded credentials, to compare two
detectors: a rule that ends false alarms must leave these exactly as they were (kind and span, every case).

    PYTHONPATH=OLD/server:. python -m bench.secrets_recall --out /tmp/old.json
    PYTHONPATH=server:. python -m bench.secrets_recall --out /tmp/new.json --against /tmp/old.json

The credentials are of the shapes people and generators make (random tokens of several alphabets, words with
digits and punctuation, UUIDs, hex), after the keys of config, env and code, in the forms of
`tests/secrets/test_detect.py::FORMS` and a few more.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from pathlib import Path
from typing import Any

from tests.secrets.corpus import LOOKALIKES, SECRETS
from tests.secrets.heldout import HELD_OUT_LOOKALIKES, HELD_OUT_SECRETS

from offprompt.secrets import find_secrets

KEYS = ("DB_PASSWORD", "password", "client_secret", "api_key", "access_token", "X-Api-Key", "PGPASSWORD", "secret")
FORMS = (
    "{k}={v}\n",
    "{k}: {v}\n",
    '"{k}": "{v}",\n',
    "{k} = '{v}'\n",
    'connect({k}="{v}")\n',
    "export {k}={v}\n",
    "{{{k}: `{v}`}}\n",
)
WORDS = ("sunshine", "dragon", "admin", "monkey", "hunter", "tr0ub4dor", "letmein", "qwerty", "football", "python")


def _credential(rng: random.Random) -> str:
    shape = rng.randrange(6)
    if shape == 0:
        return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randrange(8, 48)))
    if shape == 1:
        return "".join(
            rng.choice(string.ascii_letters + string.digits + "!@#%^*-_.+") for _ in range(rng.randrange(8, 24))
        )
    if shape == 2:
        return rng.choice(WORDS).capitalize() + str(rng.randrange(1, 10_000)) + rng.choice(("", "!", "#", "$"))
    if shape == 3:
        hexes = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"
    if shape == 4:
        return "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice((32, 40, 64))))
    return rng.choice(("live_", "sk_", "key-", "tok_")) + "".join(
        rng.choice(string.ascii_letters + string.digits) for _ in range(24)
    )


def _generated(count: int = 3000) -> list[str]:
    rng = random.Random(20261201)
    return [rng.choice(FORMS).format(k=rng.choice(KEYS), v=_credential(rng)) for _ in range(count)]


def findings() -> dict[str, Any]:
    cases = {
        "corpus.py": [case.text for case in (*SECRETS, *LOOKALIKES)],
        "heldout.py": [case.text for case in (*HELD_OUT_SECRETS, *HELD_OUT_LOOKALIKES)],
        "generated": _generated(),
    }
    return {
        name: [[[f.kind, f.start, f.end] for f in find_secrets(text)] for text in texts]
        for name, texts in cases.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--against", type=Path, help="an earlier --out: print every case whose findings differ")
    args = parser.parse_args()
    found = findings()
    args.out.write_text(json.dumps(found) + "\n")
    for name, cases in found.items():
        print(f"{name}: {len(cases)} cases, {sum(map(len, cases))} findings")
    if args.against is None:
        return 0
    earlier = json.loads(args.against.read_text())
    differ = [(name, i) for name, cases in found.items() for i, got in enumerate(cases) if earlier[name][i] != got]
    texts = _generated()
    lost = [(name, i) for name, i in differ if not set(map(tuple, earlier[name][i])) <= set(map(tuple, found[name][i]))]
    for name, i in differ:
        text = f" {texts[i]!r}" if name == "generated" else ""
        print(f"{'lost' if (name, i) in lost else 'gained'}: {name} #{i}{text}: {earlier[name][i]} -> {found[name][i]}")
    print(f"{len(differ)} cases differ, {len(lost)} of them lost a finding")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
