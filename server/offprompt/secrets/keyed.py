"""A `key = value` match read: its key, its value and where the value lies, and the values that are no
credential whatever the key (placeholders, runs of one character, published samples, a password that repeats its
user). Shared by the detectors (`detect`) and the judgements of a value that holds no secret (`harmless`)."""

from __future__ import annotations

import base64
import binascii
import re

from offprompt.secrets import values
from offprompt.secrets.exceptions import ROWS

__all__ = [
    "EXAMPLE_VALUES",
    "SAMPLE_LOGINS",
    "basic_credentials",
    "is_real",
    "key_before",
    "random_looking",
    "repeats_user",
    "value_of",
    "value_span",
]


#: Published sample keys of vendors' docs and RFCs, a row of the exceptions table.
_DOCUMENTED = next(row.pattern for row in ROWS if row.id == "documented-sample")


_PLACEHOLDER = re.compile("example|xmpl|your|redacted|placeholder|changeme|dummy|sample|fake|⟦secret:|{{")


_SIGIL = frozenset("$<{%[(*")


_PADDING = frozenset("x*.#-_0 ")


_RUN = re.compile(r"(.)\1{7}")


def is_real(value: str) -> bool:
    """Not an example key or a placeholder: those pass unchanged."""
    if not value or value[0] in _SIGIL or _DOCUMENTED.fullmatch(value):
        return False  # ${VAR}, <token>, {{ secret }}, %s, [hidden], ****
    lowered = value.lower()
    if _PLACEHOLDER.search(lowered) or _RUN.search(value):
        return False  # your-api-key, EXAMPLEKEY, a handle already; ghp_xxxxxxxxxxxx..., 00000000
    return len(set(lowered) - _PADDING) >= 2 and not values.is_alphabet_walk(value)  # `ghp_1234567890abcd…`


def random_looking(value: str, minimum: int = 16) -> bool:
    """A generated token: long enough, with letters and digits (not a word, a path or a sentence)."""
    return (
        len(value) >= minimum
        and len(set(value)) >= 8
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and is_real(value)
    )


def key_before(text: str, start: int) -> str:
    """The rest of the key name that ends with the word at `start` (`DB_` of `DB_PASSWORD`), read backwards."""
    begin = start
    while begin > 0 and start - begin < 40 and (text[begin - 1].isalnum() or text[begin - 1] in "_.-"):
        begin -= 1
    return text[begin:start]


#: Sample accounts that databases ship and their docs use: Oracle's `scott`/`tiger`.
SAMPLE_LOGINS = {"scott": "tiger"}


#: Values of documentation and tests, not of a deployment: `password: secret` in a .pypirc example.
EXAMPLE_VALUES = frozenset(
    {
        "secret", "sekrit", "password", "passwd", "pass", "pwd", "pw", "mypassword", "yourpassword", "test",
        "testing", "foo", "bar", "baz", "qux", "hunter2", "xyzzy", "user", "username", "token", "key", "apikey",
        "api_key", "value", "blah",
    }
)  # fmt: skip


def value_of(match: re.Match[str]) -> str:
    start, end = value_span(match)
    return match.string[start:end]


_TUPLE_TARGET = re.compile(r"(?:^|[\n;(])[ \t]*((?:[A-Za-z_][\w.]{0,60}[ \t]*,[ \t]*){1,8})$")


_QUOTED_ITEM = re.compile(r"""[ \t]*(?:"([^"\\\r\n]{0,4096})"|'([^'\r\n]{0,4096})')[ \t]*(,?)""")


def value_span(match: re.Match[str]) -> tuple[int, int]:
    """Where the key's value is: the group that matched, or, when the key is one of several names assigned at
    once (`user, password = "wile", "coyote"`), the quoted value at the key's place on the right."""
    group = match.lastgroup or "bare"  # the value group closes last
    span = match.span(group)
    text = match.string
    key_start = match.start() - len(key_before(text, match.start()))
    before = text[max(0, key_start - 80) : key_start].rstrip(" \t")
    if group not in ("dq", "sq") or not before.endswith(",") or "=" not in text[match.end("word") : span[0]]:
        return span
    target = _TUPLE_TARGET.search(text, max(0, key_start - 200), key_start)
    if target is None:
        return span
    at = span[0] - 1  # the opening quote of the first value
    for _ in range(target.group(1).count(",")):
        item = _QUOTED_ITEM.match(text, at)
        if item is None or not item.group(3):
            return span
        at = item.end()
    item = _QUOTED_ITEM.match(text, at)
    if item is None:
        return span
    value = 1 if item.group(1) is not None else 2
    return item.span(value)


def basic_credentials(value: str) -> str | None:
    """The `user:password` that `Basic` is followed by, decoded; None for the word basic in prose."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    if b":" not in decoded or not all(32 <= b < 127 for b in decoded):
        return None
    return decoded.decode()


def repeats_user(user: str, password: str) -> bool:
    """A password that is a label of its user's name (`guest:guest`, `admin:admin1`): a default login named after
    its user, as a label is after its key (`minio123` after `MINIO_SECRET_KEY`), or the user's own
    (`bobspassword` of `bob`)."""
    own = password.lower().removeprefix(user.lower().replace(" ", "") + "s")
    return bool(user) and (
        values.is_label(password, values.key_words(user)) or (own != password and values.is_label(own))
    )
