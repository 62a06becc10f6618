"""What a value after a secret's key is when it is not a secret: a label, a sentence, a type or class name, data,
test data of an encoding, a structured name, a documentation example.

Each rule reads the value alone (and, for a few, its key's words), so each can be stated and tested by itself;
`harmless._names_no_secret` asks them in turn. The principle (docs/secrets.md, "Left alone"): a value is a secret
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
    "abbreviates_key",
    "escapes_non_ascii",
    "is_alphabet_walk",
    "is_camel_name",
    "is_counting_hex",
    "is_file_name",
    "is_key_name",
    "is_label",
    "is_named_for",
    "is_phrase",
    "is_sentence",
    "is_sequence",
    "is_structured",
    "is_type_name",
    "is_uuid_name",
    "key_words",
]

#: Words that say what a value stands for: a label (`my-client-secret`, `test-api-key-123`) is made of them.
DESCRIBING = frozenset(
    {
        "secret", "secrets", "password", "passwords", "passwd", "pass", "pwd", "pw", "passphrase", "token",
        "tokens", "key", "keys", "apikey", "credential", "credentials", "hidden", "sensitive", "test", "testing",
        "tester", "example", "sample", "dummy", "fake", "mock", "value", "values", "placeholder", "hide",
        "generated", "regenerated",  # how it was made: `webdavgeneratedpassword1`
        "bearer",  # `ThisIsABearerToken`
    }
)  # fmt: skip
#: Words a label puts around those (`db-secret`, `top secret`, `real-secret-6-levels`); none is a label alone.
FILLER = frozenset(
    {
        "my", "your", "our", "the", "a", "an", "top", "some", "bad", "wrong", "invalid", "incorrect", "new", "old",
        "other", "another", "real", "client", "app", "db", "api", "auth", "user", "admin", "level", "levels",
        "super", "very", "data", "access", "refresh", "default", "dev", "local", "private", "foo", "bar", "baz",
        "abc", "xyz", "object", "file",
        "sk", "pk", "rk",  # a vendor's prefixes (Stripe's): `sk_test_456` is a counter after them, no key
        "webdav", "ftp", "smtp", "ldap", "ssh",  # what it is for, as `db` and `api`
        "strong", "long", "secure", "good", "weak",  # what it claims to be: `strongpassword`, `verylongpassword`
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
        words = _chunk_words(chunk, vocabulary)
        if words is None:
            return None
        found += words
    return found


def _chunk_words(chunk: str, vocabulary: frozenset[str]) -> list[str] | None:
    """A chunk's words of `vocabulary` and counters, hump by hump, or as a phrase glued in any case; or None."""
    humps = _humps(chunk)
    if humps is None:
        return None
    found: list[str] = []
    for hump in humps:
        if hump.isdigit():
            if not _COUNTER.fullmatch(hump) and not is_sequence(hump):
                return None  # `token1234` counts on as `secret123` does; `Password2024` is a year
            continue
        words = _segments(hump.lower(), vocabulary)
        if words is None:
            return _glued_phrase(chunk, humps, vocabulary)
        found += words
    return found


def _glued_phrase(chunk: str, humps: list[str], vocabulary: frozenset[str]) -> list[str] | None:
    """A phrase of no content glued in camel or alternating case (`IAmSensitive`, `ThIsIsAsEcReT`): its letters
    read as words of `vocabulary` and function words. One lower-case word is never one (`passion` is a word, not
    `pass i on`)."""
    if len(humps) < 2 or not chunk.isalpha():
        return None
    words = _segments(chunk.lower(), vocabulary | FUNCTION_WORDS)
    return None if words is None else list(words)


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
    (`Password used to generate key`), or six glued in camel case (`PassWordMustBeAtLeast6Chars.`), or ten words
    and more about anything (`Set to `true` to use IAM with this data source. …`); a passphrase is words too, but
    does not name itself and is shorter."""
    words = [word.lower() for word in _WORD.findall(value)]
    if value.count(" ") >= 9 and len(words) >= 10:
        return True  # ten words or more are documentation, whatever they speak of; a passphrase is shorter
    if " " not in value and re.fullmatch(r"[A-Za-z0-9]+\.?", value):  # PassWordMustBeAtLeast6Chars.
        words = [hump.lower() for hump in _HUMPS.findall(value) if not hump.isdigit()]
        wordlike = all(len(word) >= 2 and _VOWELS & set(word) for word in words)  # not Xk92jd0qLm's humps
        return len(words) >= 6 and wordlike and any(word in DESCRIBING for word in words)
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


def is_named_for(value: str, word: str) -> bool:
    """A class or widget named for the key's word, two capitalised words and the first that word
    (`password: "PasswordWidget"` of a form's widget map, as `text: "TextWidget"` beside it)."""
    humps = _HUMPS.findall(value)
    return (
        len(humps) == 2
        and "".join(humps) == value
        and all(_TYPE_WORD.fullmatch(hump) for hump in humps)
        and humps[0].lower() == word.lower()
    )


def is_counting_hex(value: str) -> bool:
    """Hex bytes counting up by one (`000102030405060708090A0B0C0D0E0F`): a test vector's key of no randomness,
    as the NIST and RFC vectors write it. Eight bytes at least."""
    if len(value) < 16 or len(value) % 2 or not re.fullmatch(r"[0-9a-fA-F]+", value):
        return False
    octets = [int(value[i : i + 2], 16) for i in range(0, len(value), 2)]
    return all((b - a) % 256 == 1 for a, b in itertools.pairwise(octets))


#: A part of a path: words, numbers, a partition's `name=value` (`year=2019`), joined by `-`, `_`, `.` or `=`.
_PATH_WORDS = re.compile(r"[-_.=]+")
_EXTENSION = re.compile(r"[A-Za-z0-9]{0,3}[A-Za-z][A-Za-z0-9]{0,5}")


def is_file_name(value: str) -> bool:
    """A file's name or path of words (`arrow-datasets/nyc-taxi/year=2019/part-0.parquet`,
    `CATMaterialRef.3dxml`), or a scoped package's (`@rjsf/validator-ajv8`): what is stored under a key, not a
    key. A part that is itself a token (`Xk92jd0qLm7vTb3z.txt`) keeps it a value."""
    scoped = value.startswith("@") and value.count("/") == 1
    segments = value.removeprefix("@").split("/")
    stem, dot, extension = segments[-1].rpartition(".")
    if not scoped and not (dot and stem and _EXTENSION.fullmatch(extension)):
        return False
    parts = [word for segment in (*segments[:-1], stem or extension) for word in _PATH_WORDS.split(segment)]
    return all(part and _path_word(part) for part in parts) and (scoped or len(segments) > 1 or is_camel_name(stem))


def _path_word(part: str) -> bool:
    """A word, a number or a short name with digits (`ajv8`, `vega5`), not a generated part."""
    return part.isalpha() or part.isdigit() or (part.isalnum() and not _generated(part) and len(part) <= 8)


def is_sequence(value: str) -> bool:
    """A run of the alphabet or of the digits (`abcdefg`, `123456`, `abc123`, `1234567890123`): the placeholder
    of docs."""
    runs = re.findall(r"[a-z]+|[A-Z]+|\d+", value)
    if "".join(runs) != value or not runs:
        return False
    return all(len(run) >= 3 and all(_next(a, b) for a, b in itertools.pairwise(run)) for run in runs)


def _next(a: str, b: str) -> bool:
    """`b` follows `a` in the alphabet, or in the digits round (`…7890123`)."""
    return ord(b) - ord(a) == 1 or (a.isdigit() and (int(b) - int(a)) % 10 == 1)


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


#: A part of a structured name: of one case, a capitalised word, or camel-case words, an acronym at the end at
#: most (`InstanceID` of IAM's condition key `ec2:InstanceID`).
_PLAIN_PART = re.compile(
    r"[a-z0-9]+|[A-Z0-9]+|[A-Z][a-z]+|(?:[a-z]+|[A-Z][a-z]+)(?:[A-Z][a-z]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+)*[A-Z]{2,4}"
)
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


def abbreviates_key(value: str, key: str) -> bool:
    """A camel-case name whose every word shortens a word of the key (`'credHelpers'` after
    `CREDENTIAL_HELPER_KEY`, `'credsStore'` after `CREDENTIAL_STORE_KEY`): the name of the field the key names.
    A word of the value's own (`credXk92`) keeps it a secret."""
    words = _humps(value)
    if words is None or len(words) < 2:
        return False
    stems = [word.lower().removesuffix("s") for word in words]
    keys = key_words(key)
    return all(len(stem) >= 3 and stem.isalpha() and any(k.startswith(stem) for k in keys) for stem in stems)


#: Words of no content of their own: a phrase made of them and words for a secret (`as will this`,
#: `please hide me`) is a fixture of a redaction test, not a passphrase.
FUNCTION_WORDS = frozenset(
    {
        "as", "will", "this", "that", "these", "those", "it", "is", "be", "are", "was", "me", "you", "we", "they",
        "please", "should", "must", "can", "not", "no", "do", "of", "to", "and", "or", "in", "on", "at", "by",
        "for", "with", "from", "here", "there", "also", "too", "so", "i", "am", "required", "needed",
    }
)  # fmt: skip


def is_phrase(value: str) -> bool:
    """Two to four lower-case words of no content of their own and words for a secret (`as will this`,
    `please hide me`, `it is very secret`), or joined by dashes or underscores with a word for a secret among them
    (`no-password-required`); `purple monkey dishwasher` is a passphrase."""
    if _no_content(value.split(" ")):
        return True
    joined = re.split(r"[-_]", value)
    return _no_content(joined) and any(word in DESCRIBING for word in joined)


def _no_content(words: list[str]) -> bool:
    vocabulary = FUNCTION_WORDS | DESCRIBING | FILLER
    return 2 <= len(words) <= 4 and all(word.isalpha() and word.islower() and word in vocabulary for word in words)


#: The last word of a name of a key or a header: a value made of words and ending with one names a key.
_KEY_ENDINGS = frozenset(
    {
        "secret", "secrets", "key", "keys", "token", "tokens", "password", "passwd", "passphrase", "credential",
        "credentials", "pass",
    }
)  # fmt: skip
_NAME_PART = re.compile(r"[A-Za-z]+\d{0,3}")


def is_key_name(value: str) -> bool:
    """A name of a key, a header or a label ending with what it stands for: words (each with a counter at most)
    joined by `-`, `_`, `.` or spaces, the last a word for a secret (`AWS_SECRET_ACCESS_KEY`, `my-idp-secret`,
    `as1-client-secret`, `Access-Control-Allow-Credentials`). `Xk92jd0q-secret` has a value of its own."""
    parts = [part for part in re.split(r"[-_. ]+", value) if part]
    return (
        len(parts) >= 2
        and parts[-1].lower() in _KEY_ENDINGS
        and all(_NAME_PART.fullmatch(part) for part in parts)
        and not any(_generated(part) for part in parts)
    )


_VOWELS = frozenset("aeiouyAEIOUY")


def is_camel_name(value: str) -> bool:
    """A camel-case name of code or of an API (`PublicIpv4Pools`, `Ec2KeyName`, `enableServerSideEncryption`):
    two words or more, each of two letters or more with a vowel, a digit between them at most. A generated
    value's humps are short and seldom hold a vowel (`Xk92jd0qLm7vTb3z`)."""
    if not value.isalnum():
        return False
    humps = _HUMPS.findall(value)
    words = [hump for hump in humps if not hump.isdigit()]
    return (
        "".join(humps) == value
        and len(words) >= 2
        and all(len(word) >= 2 and _VOWELS & set(word) for word in words)
        and all(len(hump) == 1 for hump in humps if hump.isdigit())
    )


def is_alphabet_walk(value: str) -> bool:
    """A long value typed by walking the alphabet and the digits, case aside (`AB1C2defGHijkLMNo3PqQRstUvwxyz…`,
    `a123b45c6d78e9f012…`): a documentation placeholder. Its letters, taken alone, and its digits, taken alone,
    mostly step by one (every time under forty characters); a generated value's do so about once in 26 and once in
    10. Twelve characters at least."""
    if len(value) < 12:
        return False
    share = 1.0 if len(value) < 40 else 0.6  # a shorter walk steps every time (`A1B2C3D4E5F6G7H8I9J0`)
    letters = [ord(c) for c in value.lower() if "a" <= c <= "z"]
    digits = [int(c) for c in value if c.isdigit()]
    if len(letters) + len(digits) < 12:
        return False

    def walks(run: list[int], base: int) -> bool:
        steps = ((b - a) % base == 1 for a, b in itertools.pairwise(run))
        return all(steps) if share == 1.0 else len(run) < 2 or sum(steps) >= share * (len(run) - 1)

    return walks(letters, 26) and walks(digits, 10)


_UUID_NAME = re.compile(r"(?:[a-z]+-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12,13}", re.IGNORECASE)


def is_uuid_name(value: str) -> bool:
    """A UUID, a word before it at most (`signed-2065c468-…`): after a bare `key`, the id of an object or an entry
    (an S3 object's, a stream's file's), not an API key, which a key's name says (`api_key`, `X-Api-Key`)."""
    return _UUID_NAME.fullmatch(value) is not None
