"""What a value after a secret's key is when it is not a secret: a label, a sentence, a type or class name, data,
test data of an encoding, a structured name, a documentation example.

Each rule reads the value alone (and, for a few, its key's words), so each can be stated and tested by itself;
`detect._names_no_secret` asks them in turn. The principle (docs/secrets.md, "Left alone"): a value is a secret
when it carries something of its own. One made only of the words that say what it stands for, or that repeats its
key, or that is a name, a number or a sentence of the code around it, grants nothing, and a handle in its place
breaks the code the model reads and edits.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection
from functools import lru_cache
from urllib.parse import unquote

__all__ = [
    "escapes_non_ascii",
    "is_data",
    "is_label",
    "is_sentence",
    "is_sequence",
    "is_structured",
    "is_type_name",
    "key_words",
    "shares_key_stem",
]

#: Words that say what a value stands for: a label (`my-client-secret`, `test-api-key-123`) is made of them.
DESCRIBING = frozenset(
    {
        "secret", "secrets", "password", "passwords", "passwd", "pass", "pwd", "pw", "passphrase", "token",
        "tokens", "key", "keys", "apikey", "credential", "credentials", "hidden", "sensitive", "test", "testing",
        "tester", "example", "sample", "dummy", "fake", "value", "values", "placeholder",
    }
)  # fmt: skip
#: Words a label puts around those (`db-secret`, `top secret`, `real-secret-6-levels`); none is a label alone.
FILLER = frozenset(
    {
        "my", "your", "our", "the", "a", "an", "top", "some", "bad", "wrong", "invalid", "incorrect", "new", "old",
        "other", "another", "real", "client", "app", "db", "api", "auth", "user", "admin", "level", "levels",
        "super", "very", "data", "access", "refresh", "default", "dev", "local", "private",
    }
)  # fmt: skip

_SEPARATORS = re.compile(r"[-_. :]+")
#: The words of a chunk: runs of capitals, capitalised or lower-case words, digits (`testPass` -> test, Pass).
_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_COUNTER = re.compile(r"\d{1,3}")  # a fixture's index (`secret1`, `test123`), not a year (`Password2024`)


def key_words(key: str) -> frozenset[str]:
    """The words of a key's name (`MINIO_SECRET_KEY` -> minio, secret, key; `clientSecret` -> client, secret)."""
    return frozenset(word.lower() for chunk in _SEPARATORS.split(key) for word in _HUMPS.findall(chunk))


def _humps(chunk: str) -> list[str] | None:
    """A chunk's words, or None when it holds anything but letters and digits (`MyPassword!42`)."""
    words = _HUMPS.findall(chunk)
    return words if "".join(words) == chunk else None


@lru_cache(maxsize=4096)
def _segments(letters: str, vocabulary: frozenset[str]) -> tuple[str, ...] | None:
    """`letters` as words of `vocabulary` glued together (`somepass` -> some, pass), or None."""
    if not letters:
        return ()
    for end in range(len(letters), 0, -1):
        head = letters[:end]
        if head in vocabulary:
            rest = _segments(letters[end:], vocabulary)
            if rest is not None:
                return (head, *rest)
    return None


def _label_words(value: str, vocabulary: frozenset[str]) -> list[str] | None:
    """The value's words when it is made only of `vocabulary` and counters, or None."""
    found: list[str] = []
    for chunk in _SEPARATORS.split(value.strip("-_. :")):
        humps = _humps(chunk)
        if humps is None:
            return None
        for hump in humps:
            if hump.isdigit():
                if not _COUNTER.fullmatch(hump):
                    return None
                continue
            words = _segments(hump.lower(), vocabulary)
            if words is None:
                return None
            found += words
    return found


def is_label(value: str, key: Collection[str] = ()) -> bool:
    """A value made only of words that say what it stands for, filler words, its key's words and counters,
    with at least one of the first or of its key's (`secret123`, `my-client-secret`, `somepass`,
    `test-api-key-123`, `minio123` after `MINIO_SECRET_KEY`). Anything else in it keeps it a secret: another word
    (`admin`, `hunter3`), punctuation (`MyPassword!42`), a year (`Password2024`)."""
    telling = DESCRIBING | frozenset(key)
    words = _label_words(value, telling | FILLER)
    return words is not None and any(word in telling for word in words)


_WORD = re.compile(r"[A-Za-z]+")


def is_sentence(value: str) -> bool:
    """Prose about a secret, not one: four words or more, one of them a word for a secret
    (`Password used to generate key`); a passphrase is words too, but does not name itself."""
    words = [word.lower() for word in _WORD.findall(value)]
    return value.count(" ") >= 3 and any(word in DESCRIBING for word in words)


_TYPE_WORD = re.compile(r"[A-Z][a-z]*[aeiouy][a-z]*")


def is_type_name(value: str, word: str) -> bool:
    """A class or type name holding the key's word (`V1SecretVolumeSource` after `secret`,
    `V1ServiceAccountTokenProjection` after `service_account_token`): capitalised words, a short acronym before
    them at most, three in all, and no digits at the end (`MySecretSauce2024` is a password)."""
    if not value.isidentifier() or value[-1].isdigit():
        return False
    humps = [hump for hump in _HUMPS.findall(value) if not hump.isdigit()]
    words = humps[1:] if humps and humps[0].isupper() and len(humps[0]) <= 4 else humps  # V1, HTTP, UI
    capitalised = all(_TYPE_WORD.fullmatch(hump) for hump in words)
    return capitalised and len(humps) >= 3 and word.lower() in (hump.lower() for hump in words)


_DATA = re.compile(r"\d{1,3}|\d+(?:[-.:/]\d+)+")


def is_data(value: str) -> bool:
    """A small number, a date, a time or a version (`42`, `2015-07-29`, `1.0.0`): data, not a credential."""
    return _DATA.fullmatch(value) is not None


def is_sequence(value: str) -> bool:
    """A run of the alphabet or of the digits (`abcdefg`, `123456`, `abc123`): the placeholder of docs."""
    runs = re.findall(r"[a-z]+|[A-Z]+|\d+", value)
    if "".join(runs) != value or not runs:
        return False
    return all(len(run) >= 3 and all(ord(b) - ord(a) == 1 for a, b in itertools.pairwise(run)) for run in runs)


_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|&#(\d{1,7});|((?:%[0-9A-Fa-f]{2})+)")


def escapes_non_ascii(value: str) -> bool:
    """Escapes that stand for letters beyond ASCII (`\\xe5\\xf6`, `\\ud83d`, `&#229;`, `%C3%A9`): test data of
    an encoding. A generated secret is ASCII; its escapes, if any, are of ASCII punctuation (`%2B`, `%3D`), and
    a lone `%fF` of a random password is no UTF-8."""
    for match in _ESCAPE.finditer(value):
        hex_byte, hex_unit, decimal, percent = match.groups()
        if percent is not None:
            if _utf8_beyond_ascii(bytes.fromhex(percent.replace("%", ""))):
                return True
        elif (int(hex_byte or hex_unit, 16) if decimal is None else int(decimal)) >= 0x80:
            return True
    return False


def _utf8_beyond_ascii(data: bytes) -> bool:
    try:
        return any(ord(char) >= 0x80 for char in data.decode("utf-8"))
    except UnicodeDecodeError:
        return False


_PLAIN_PART = re.compile(r"[a-z0-9]+|[A-Z0-9]+|[A-Z][a-z]+")
_STRUCTURE = re.compile(r"[-_.:#/ ]+")


_RUNS = re.compile(r"[A-Za-z]+|\d+")


def _generated(part: str) -> bool:
    """A part that is itself a token: letters and digits mixed, long (`sk_9f8a7b6c5d4e3f2a1b0c`'s second) or
    often (`secp384r1` is a name, four runs)."""
    mixed = any(c.isdigit() for c in part) and any(c.isalpha() for c in part)
    return mixed and (len(part) >= 12 or (len(part) >= 8 and len(_RUNS.findall(part)) >= 5))


def is_structured(value: str) -> bool:
    """A name built of parts, not a generated token (`SPEED_SLOW_4G`, `aws.s3.key`, `rsa:3072`, `ns0:value`):
    two parts or more, each of one case and none a token itself, and at least half of them words or numbers.
    `Zq7.Lm3.Xp9` mixes cases within its parts, `sk_9f8a7b6c5d4e3f2a1b0c` has a token for a part: both stay
    tokens."""
    parts = [part for part in _STRUCTURE.split(unquote(value)) if part]
    if len(parts) < 2 or not all(_PLAIN_PART.fullmatch(part) and not _generated(part) for part in parts):
        return False
    wordy = sum(1 for part in parts if part.isdigit() or (part.isalpha() and len(part) >= 2))
    return 2 * wordy >= len(parts)


_STEM = re.compile(r"[-_.]+")


def shares_key_stem(value: str, key: str) -> bool:
    """A sibling name of the key: the same first two words, and then only words (`lh-icon--checklist-fail` after
    `lh-icon--checklist-pass`); `db-main-Xk92jd0` after `db-main-password` holds a value of its own."""
    value_parts = [part.lower() for part in _STEM.split(value) if part]
    key_parts = [part.lower() for part in _STEM.split(key) if part]
    return (
        len(value_parts) >= 3
        and len(key_parts) >= 3
        and value_parts[:2] == key_parts[:2]
        and all(part.isalpha() for part in value_parts[2:])
    )
