"""Finds known-format secrets in text: one cheap prefilter, then only the detectors it points at.

The detectors are modelled on `detect-secrets`' plugins (aws, private_key, github_token, gitlab_token, slack,
stripe, openai, jwt, basic_auth, azure_storage_key, keyword), compiled once, each anchored on a literal and
bounded in length, so every scan is linear in the text. `detect-secrets` itself was measured here and not
used: it scans line by line in Python at about 2 ms a line (42 s for 1 MB of log lines) and its entropy
plugins flag every hex id and git SHA of an ordinary log.

Documented example keys (AWS's `AKIAIOSFODNN7EXAMPLE`, Stripe's and jwt.io's published samples, anything
holding the word EXAMPLE) and placeholders (`xxxx...`, `<your-token>`, `${VAR}`, `****`) are not secrets:
they grant nothing, and documentation the model reads must stay readable. Nor is a value after a secret's key
that names, labels or describes something else (`settings.SECRET_KEY`, `my-client-secret`, a doctest's): the
rules for those are here and in `values`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick
from pydantic import BaseModel

from offprompt.secret_kinds import SECRET_KINDS
from offprompt.secrets import values

__all__ = ["KINDS", "Finding", "find_secrets", "json_may_hold_secret", "may_hold_secret", "may_hold_secret_in"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret value in a text: `text[start:end]`, and what kind of secret it is."""

    start: int
    end: int
    kind: str
    value: str


@dataclass(frozen=True, slots=True)
class _Detector:
    """Runs `pattern.match` where one of its `anchors` (lower case) occurs in the lower-cased text.

    Anchoring on literals, all found in one Aho-Corasick pass, keeps each scan linear and fast: `re` only skips ahead
    quickly for a pattern that starts with a case-sensitive literal, and most of these do not.
    """

    kind: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int | str = 0  # the part of the match that is the secret
    check: Callable[[str], bool] | None = None  # a further test of the value (placeholders, entropy)
    kind_of: Callable[[re.Match[str]], str] | None = None
    word_start: bool = True  # the match must not continue a word (`xghp_...` is not a token)


# Published sample keys from vendors' documentation (AWS's carry the word EXAMPLE and are caught by that rule).
_DOCUMENTED = frozenset(
    {
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe API reference
        "sk_test_BQokikJOvBiI2HlWgH4olfQ2",  # Stripe docs, older
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        # jwt.io's default token
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIy"
        "fQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        # PyJWT's README: {"some": "payload"} signed with "secret"
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzb21lIjoicGF5bG9hZCJ9.4twFt5NiznN84AWoo1d7KO1T_yoc0Z6XOpOVswacPZg",
        # RFC 5849 (OAuth 1.0): the client, temporary and token credentials of its examples
        "dpf43f3p2l4k3l03",
        "kd94hf93k423kf44",
        "hh5s93j4hdidpola",
        "hdhd0244k9j7ao03",
        "hfdp7dh39dks9884",
        "nnch734d00sl2jdk",
        "pfkkdhi9sl3r4s00",
        "0685bd9184jfhq22",
        "ad180jjd733klru7",
        # RFC 6749 (OAuth 2.0) and RFC 6750: s6BhdRkqt3:gX1fBat3bV in Basic, its codes and tokens; RFC 7009's token
        "czZCaGRSa3F0MzpnWDFmQmF0M2JW",
        "gX1fBat3bV",
        "7Fjfp0ZBr1KtDRbnfVdmIw",
        "SplxlOBeZQQYbYS6WxSbIA",
        "2YotnFZFEjr1zCsicMWpAA",
        "tGzv3JOkF0XG5Qx2TlKWIA",
        "mF_9.B5f-4.1JqM",
        "45ghiukldjahdnhzdauz",
        # Telegram's Bot API docs
        "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
        # Google's password of every P12 service-account key file it issues
        "notasecret",
    }
)
_PLACEHOLDER = re.compile("example|xmpl|your|redacted|placeholder|changeme|dummy|sample|fake|⟦secret:|{{")
_SIGIL = frozenset("$<{%[(*")
_PADDING = frozenset("x*.#-_0 ")
_NOT_VALUES = frozenset(
    {
        "null", "none", "true", "false", "undefined", "nil", "n/a", "na", "empty",
        # type names: `password: bool`, `secret: SecretStr` (an annotation, not a value)
        "string", "str", "bool", "boolean", "int", "integer", "float", "number", "bytes", "dict", "list", "object",
        "any", "unknown", "never", "char", "secretstr", "secretbytes",
        # option words: fetch's `credentials: 'include'`, `'same-origin'`, `'omit'`; switches
        "include", "omit", "same-origin", "required", "optional", "auto", "enabled", "disabled", "on", "off",
        "default",  # `credentials='default'`: the environment's default credentials, looked up at run time
    }
)  # fmt: skip


_RUN = re.compile(r"(.)\1{7}")
#: Letters typed in runs, a placeholder's (`xxxxyyyy`, `aaaabbbbcccc`), punctuation after it aside.
_LETTER_RUNS = re.compile(r"(?:([A-Za-z])\1{3,}){2,}[^\w\s]?")


def _real(value: str) -> bool:
    """Not an example key or a placeholder: those pass unchanged."""
    if not value or value[0] in _SIGIL or value in _DOCUMENTED:
        return False  # ${VAR}, <token>, {{ secret }}, %s, [hidden], ****
    lowered = value.lower()
    if _PLACEHOLDER.search(lowered) or _RUN.search(value):
        return False  # your-api-key, EXAMPLEKEY, a handle already; ghp_xxxxxxxxxxxx..., 00000000
    return len(set(lowered) - _PADDING) >= 2


def _random_looking(value: str, minimum: int = 16) -> bool:
    """A generated token: long enough, with letters and digits (not a word, a path or a sentence)."""
    return (
        len(value) >= minimum
        and len(set(value)) >= 8
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and _real(value)
    )


def _mixed_token(value: str) -> bool:
    """A base62 key (OpenAI, npm, Hugging Face): upper and lower case and digits, unlike `sk-circle-bounce-1`."""
    return _random_looking(value, 20) and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _assigned_value(value: str) -> bool:
    """A value after `password=`: anything real that is not a type name, a boolean or a path."""
    return (
        _real(value)
        and value.lower().strip("'\"`") not in _NOT_VALUES
        and value[:1] not in "/~."
        and not value.startswith(("os.", "env", "process.", "getenv", "secrets.", "http://", "https://"))
    )


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# A value after `key:` / `key=` / `"key": `: quoted inside a JSON string (\"value\"), double-quoted with escapes,
# single-quoted, or bare up to a separator.
_VALUE = (
    r'(?:\\"(?P<eq>[^"\\\r\n]{1,4096})\\"'
    r'|"(?P<dq>(?:[^"\\\r\n]|\\.){1,4096})"'
    r"|'(?P<sq>[^'\r\n]{1,4096})'"
    r"""|(?P<bare>[^\s"',;&<>)}\]]{1,4096}))"""
)
_ASSIGN = r"""\\?["']?[ \t]{0,8}(?:=(?!=)|:=|:(?!:)|=>)[ \t]{0,8}"""  # `::` is a path, `==` a comparison

# A key whose value is a secret ends with a word of the "password" detector: `db_password`, `API_KEY`,
# `clientSecret`, `aws_secret_access_key`, `_authToken`; the rest of its name is read backwards from the word.
# These key names (lower case) end with such a word but hold no secret.
_HARMLESS_KEYS = (
    "page_token", "pagetoken", "next_token", "nexttoken", "continuation", "sync_token", "csrf", "public_key",
    "publickey", "primary_key", "foreign_key", "sort_key", "partition_key", "key_id", "idempotency",
    "fingerprint", "gpg_key", "pgp_key", "websocket_key",  # a GPG key's fingerprint; RFC 6455's nonce
    "change_token", "changetoken", "lock_token", "locktoken", "update_token", "updatetoken",  # AWS's concurrency
    "client_request_token", "clientrequesttoken", "lifecycle_action_token", "lifecycleactiontoken",  # idempotency
    "result_key", "limit_key", "input_token", "output_token",  # a paginator's field names (botocore)
    "object_key", "objectkey",  # an S3 object's name (`"S3objectKey": "ami-1234567890abcdef0.bin"`)
)  # fmt: skip
_HARMLESS = re.compile("|".join(_HARMLESS_KEYS))
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")


def _key_before(text: str, start: int) -> str:
    """The rest of the key name that ends with the word at `start` (`DB_` of `DB_PASSWORD`), read backwards."""
    begin = start
    while begin > 0 and start - begin < 40 and (text[begin - 1].isalnum() or text[begin - 1] in "_.-"):
        begin -= 1
    return text[begin:start]


def _word_before(text: str, start: int) -> str:
    """The word one space before `start`: `GPG` of `Release GPG key: ...`, a key's name written as prose."""
    end = start - 1
    if end < 1 or text[end] != " ":
        return ""
    begin = end
    while begin > 0 and end - begin < 20 and text[begin - 1].isalpha():
        begin -= 1
    return text[begin:end]


def _keyword_kind(match: re.Match[str]) -> str:
    """The kind of a `key = value` secret, from the key's whole name; "" when the key holds none."""
    key = _key_of(match)
    value = _value_of(match)
    kind = _kind_by_key(key.lower().replace("-", "_"), value) if key else ""
    return "" if not kind or _holds_none(match, key, value) else kind  # the cheap test first: `"key": "k0"`


def _key_of(match: re.Match[str]) -> str:
    """The whole key whose last word matched (`DB_PASSWORD`, `clientSecret`), as the text spells it; "" when the
    word is not a key's (`bypass`, `monkey`, a handle's kind, `pass: 12` of a test summary)."""
    word = match.group("word")
    if match.string[match.start() - 1 : match.start()] == "⟦":
        return ""  # the word of a handle, ⟦secret:id kind⟧
    before = _key_before(match.string, match.start())
    camel = before[-1:].islower() and word[0].isupper()  # userPassword, _authToken
    glued = before[-1:].isalnum() and not camel  # apikey, APIKEY, bypass, monkey
    if glued and not before.lower().endswith(_KEY_PREFIXES) and word.lower() not in _GLUED_WORDS:
        return ""  # PGPASSWORD and userpassword are keys; bypass, monkey and compass are not
    if word.lower() == "pass" and before[-1:] not in ("_", "-", "."):
        return ""  # "pass: 12, fail: 3" is a test summary; DB_PASS is a key
    return before + word


def _holds_none(match: re.Match[str], key: str, value: str) -> bool:
    """Whether the key is one that holds no secret (`next_token`, `GPG key`), or its value is none."""
    scheme, _, credentials = value.partition(" ")
    if scheme.lower() == "basic" and _basic_credentials(credentials) is not None:
        return True  # `TOKEN = "Basic bWU6cGFzcw=="`: the basic-auth detector judges what follows the scheme
    lowered = key.lower().replace("-", "_")
    key_start = match.start() - len(key) + len(match.group("word"))  # the key ends with the matched word
    prose_key = f"{_word_before(match.string, key_start).lower()}_{lowered}"
    return (
        _HARMLESS.search(lowered) is not None
        or _HARMLESS.search(prose_key) is not None
        or _aws_request_id(match.string, key, key_start)
        or _named_not_assigned(match, key_start)
        or _names_no_secret(match, key, value)
        or _sample_login(match.string, match.start(match.lastgroup or "bare"), value)
        or _repeats_user_before(match.string, key_start, value)
        or _anonymous_login(match.string, match.start(match.lastgroup or "bare"), value)
        or _enumerated(match.string, match.start(), value)
        or (not _random_looking(value) and _in_field_list(match.string, key_start))
    )


#: The headers of a docstring's field lists (Google's style): what is under one describes a parameter.
#: Capitalized as docstrings write them; YAML's `args:` is a mapping whose values are values.
_FIELD_LISTS = frozenset({"Args:", "Arguments:", "Parameters:", "Keyword Args:", "Kwargs:", "Attributes:"})


def _in_field_list(text: str, key_start: int) -> bool:
    """A key indented under a docstring's `Args:` (or `Attributes:`) header: its value is the parameter's
    description (`credentials: Unused.`, `oauth2ClientSecret: OAuth2 client secret to use`); the caller keeps a
    random token there a secret."""
    lines = _lines_back(text, key_start)
    own = next(lines)
    if own.strip():
        return False  # something before the key on its line: not a field of a list
    indent = len(own)
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if len(line) - len(line.lstrip()) < indent:
            return stripped in _FIELD_LISTS
    return False


#: Sample accounts that databases ship and their docs use: Oracle's `scott`/`tiger`.
_SAMPLE_LOGINS = {"scott": "tiger"}


_ANONYMOUS = re.compile(r"\banonymous\b", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")


def _anonymous_login(text: str, at: int, password: str) -> bool:
    """An e-mail as the password of the user `anonymous` just before it: anonymous FTP's convention (RFC 1635),
    which grants what the server gives anyone."""
    return _EMAIL.fullmatch(password) is not None and _ANONYMOUS.search(text, max(0, at - 120), at) is not None


#: A user's name given just before a password, as code and config write it (`access_key='limited'`, `user="bob"`).
_USER_BEFORE = re.compile(
    r"""\b(?:user(?:_?name)?|login|access_key(?:_id)?)["']?[ \t]*[=:][ \t]*["']([\w.@-]{1,64})["']""", re.IGNORECASE
)


def _repeats_user_before(text: str, key_start: int, password: str) -> bool:
    """A password that is a label of the user given just before it (`access_key='test_fs_limited_user',
    secret_key='limited123'`, as `guest:guest` in a URL): a test server's login named after its user. Another
    word (`access_key='limited', secret_key='Xk92jd0q'`) is a secret."""
    users = _USER_BEFORE.findall(text, max(0, key_start - 160), key_start)
    return bool(users) and _repeats_user(users[-1], password)


def _sample_login(text: str, at: int, password: str) -> bool:
    """A sample account's password with its user named just before it (`scott:tiger@`, `UID=scott;PWD=tiger`,
    `user="scott", password="tiger"`); the same word after another user, or alone, is a secret."""
    before = text[max(0, at - 120) : at].lower()
    return any(
        password.lower() == sample and re.search(rf"\b{user}\b", before) for user, sample in _SAMPLE_LOGINS.items()
    )


_CONSTANT_LINE = re.compile(r"[ \t]*[A-Z][A-Z0-9_]*[ \t]*=[ \t]*(\d{1,9})[ \t]*(?:#.*)?")


def _enumerated(text: str, at: int, value: str) -> bool:
    """A number in a run of constants numbered in sequence (`ER_NOT_VALID_PASSWORD = 1819` after `... = 1818`):
    an error code of an enumeration, not a password."""
    if not value.isdigit():
        return False
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end == -1 else end
    previous = text[text.rfind("\n", 0, max(0, start - 1)) + 1 : max(0, start - 1)] if start else ""
    after = text.find("\n", end + 1)
    following = text[end + 1 : len(text) if after == -1 else after]
    for line, step in ((previous, -1), (following, 1)):
        constant = _CONSTANT_LINE.fullmatch(line)
        if constant and int(constant.group(1)) == int(value) + step:
            return True
    return False


def _aws_request_id(text: str, key: str, key_start: int) -> bool:
    """`"ClientToken"` and `"RequestToken"`, quoted and capitalised as AWS's JSON spells them: an idempotency token
    and a request's id. Vault's `client_token` and a Go struct's `ClientToken:` are tokens."""
    return key in ("ClientToken", "RequestToken") and text[key_start - 1 : key_start] in ('"', "'")


#: Before a key, what makes it a name rather than a field holding a value: the last part of a quoted `::` path
#: (`"AWS::IAM::AccessKey"`, a CloudFormation type), a field of an ARN (`arn:aws:secretsmanager:…:secret:N`, also
#: mistyped: `aarn:aws:…`), a reST or epytext field of a docstring (`:param password:`, `@type password:`), a
#: string a ternary yields (`visible ? "password" : "text"`, an input's type).
_NAMING_BEFORE = re.compile(
    r"""(?:["'][\w:]*::|arn:[\w*-]*:[\w*-]+:[^\s"'`]*|[:@](?:param|type|ivar|cvar|var|keyword|kwarg)[ \t]+[\w.]*"""
    r"""|\?[ \t]*["'])$"""
)


def _named_not_assigned(match: re.Match[str], key_start: int) -> bool:
    """Whether the key is a name, not a field: a quoted `::` path's last part, a field of an ARN, a docstring's
    reST or epytext field, a ternary's string, or the first half of one quoted `key:name` (`"passwd:gecos"`, a
    Scheme builtin)."""
    text = match.string
    if _NAMING_BEFORE.search(text, max(0, key_start - 300), key_start):
        return True
    quote = text[key_start - 1 : key_start]
    glued = text[match.end("word") : match.start(match.lastgroup or "bare")] == ":"
    return quote in ("'", '"') and glued and match.lastgroup == "bare" and text[match.end() : match.end() + 1] == quote


def _kind_by_key(key: str, value: str) -> str:
    """The kind a key's name gives its value (`key` lower case, `_` for `-`); a generic key or token only holds a
    generated value (`SPEED_SLOW_4G` is a name)."""
    if ("aws" in key or "secretaccesskey" in key or "secret_access_key" in key) and _AWS_SECRET.fullmatch(value):
        return "aws-secret-key"
    if "aws" in key and key.replace("_", "").endswith("secretaccesskey") and len(value) < 20:
        return ""  # `aws_secret_access_key="sk"`: a mock's stub, shorter than any AWS secret key (40)
    if key.replace("_", "").endswith(("sessiontoken", "securitytoken")) and len(value) >= 100:
        return "aws-session-token"
    if "pass" in key or "pwd" in key:
        return "password"
    if "secret" in key or "cred" in key:
        return "secret"
    if key.strip("_.") == "key" and values.is_uuid_name(value):
        return ""  # `"key": "48c67f3c-…"`: an object's or an entry's id; an API key's name says so
    generated = (
        _random_looking(value, 8)
        and " " not in value  # `key = "6 days, 23:11:12"`: words, which a generated key or token never holds
        and not values.is_structured(value)
        and not values.is_camel_name(value)
        and not values.is_file_name(value)
    )
    if key.endswith("token"):
        return "token" if generated else ""
    return "api-key" if generated else ""


#: Values of documentation and tests, not of a deployment: `password: secret` in a .pypirc example.
_EXAMPLE_VALUES = frozenset(
    {
        "secret", "sekrit", "password", "passwd", "pass", "pwd", "pw", "mypassword", "yourpassword", "test",
        "testing", "foo", "bar", "baz", "qux", "hunter2", "xyzzy", "user", "username", "token", "key", "apikey",
        "api_key", "value", "blah",
    }
)  # fmt: skip
#: Words of code that start an expression, not a value: `token = await fetch(...)`, `key: function (`.
_CODE_WORDS = frozenset(
    {
        "await", "new", "this", "self", "cls", "function", "lambda", "async", "yield", "not", "typeof",
        "require", "return", "void", "const", "let", "var", "def", "if", "else", "or", "and", "in", "is", "super",
    }
)  # fmt: skip
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
#: An attribute path of code (`settings.SECRET_KEY`, `win32api.RegEnumKey`); a generated value split by dots
#: (`Zq7.Lm3.Xp9`) has a digit in every part.
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\??\.#?[A-Za-z_$][\w$]*)+")
_WORD_PART = re.compile(r"(?:^|\.)[A-Za-z_$]+(?:\.|$)")
#: A call or an index of code: a name (or attribute path) and then `(` or `[`, with no password punctuation.
_CALL = re.compile(r"[A-Za-z_$][\w$.#]*[(\[][^!@#%^&*~]*$")
_UNPACKING = re.compile(r"(?<=[(,\s])\*{1,2}(?=[A-Za-z_])")  # `*args`, `**kwargs` in a call
_POWER = re.compile(r"(?<=\d)\*\*(?=\d)")  # `randrange(2**64)`: arithmetic, no password's stars
#: Minified JavaScript's booleans (`this.pass=!1`, `withCredentials=!1`).
_MINIFIED_BOOLEANS = frozenset({"!0", "!1"})
_LEADING_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def _names_no_secret(match: re.Match[str], key: str, value: str) -> bool:
    """Whether the value after a secret's key (`key` as the text spells it) is something else: in code, a name or
    an expression (`password = password`, `secret_key = settings.SECRET_KEY`, `key=itemgetter(1)`, `token = tok`
    where `tok` is a variable of the same text); anywhere, the key's own name (`_CLIENT_SECRET = 'CLIENT_SECRET'`),
    a label or a sentence (`my-client-secret`, `Password used to generate key`), data, or a documentation example
    (`password: secret`, a doctest's). A bare word of a `KEY=value` line that names nothing else in the text
    (`DB_PASSWORD=s3cretpass`) is still a secret."""
    inner = _TYPED_NEWLINE.sub("", value.strip("`"))  # `test-client-secret` of minified code, `'secret\\n'`
    if _names_itself(inner, key, match.group("word")) or _not_a_credential(value):
        return True
    if _in_doctest(match.string, match.start()) or _called_fingerprint(match.string, value):
        return True  # `>>> session.fetch_token(url)` and the answer it prints; a public key's digest
    if match.lastgroup == "bare":
        return _is_code(match, value) or _ATTRIBUTE_LIST.match(value) is not None or _CSS_RULE.match(value) is not None
    return _BETWEEN_LITERALS.match(value) is not None or _joined_prefix(match, value)


#: A CSS selector's pseudo-element or -class and its rule's opening (`.fa-user-secret:before{content:…}`).
_CSS_RULE = re.compile(r"[a-z][a-z-]*(?:\([^)]{0,40}\))?\{")
#: After a literal, `+` and a name: the literal is joined to a value of the code (`"_xxtpuv3internal_" + key_str`).
_JOINED = re.compile(r"[ \t]*\+[ \t]*[A-Za-z_$]")


def _joined_prefix(match: re.Match[str], value: str) -> bool:
    """A literal ending with a separator and joined to a name (`key = "_xxtpuv3internal_" + key_str`): the prefix
    of a name built at run time. A whole literal joined to nothing is still a value."""
    return value[-1:] in "_-/:." and _JOINED.match(match.string, match.end()) is not None


#: A "quoted value" that is code between two string literals: the key ended a literal (`"… arrayDefaultKey: "+t),
#: t.slice(0,-1)+"defaults"`, `[b"Password:", b"Username:"]`), so its quote closes one and the next opens one.
_BETWEEN_LITERALS = re.compile(r"""[ \t]*(?:\+[ \t]*[\w$(][^"']*\)|,[ \t]+[A-Za-z_])""")
#: A bare value that is an attribute list (`#EXT-X-KEY:METHOD=AES-128`, an HLS tag's): the key's next attribute.
_ATTRIBUTE_LIST = re.compile(r"[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*=")


#: A newline typed after a value (`'secret\\n'`, what pexpect sends): the label before it is still a label.
_TYPED_NEWLINE = re.compile(r"(?:\\{1,2}[rn])+$")
_HEX = re.compile(r"[0-9a-fA-F:]{16,}")


def _called_fingerprint(text: str, value: str) -> bool:
    """A hex value the same text calls a fingerprint where it gives it (`the key with a fingerprint of 'e0d96d…'`,
    and then `--key='e0d96d…'`): a public key's digest, which grants nothing."""
    if not _HEX.fullmatch(value):
        return False
    at = text.find(value)
    while at != -1:
        if "fingerprint" in text[max(0, at - 60) : at].lower():
            return True
        at = text.find(value, at + 1)
    return False


def _names_itself(value: str, key: str, word: str) -> bool:
    """The value says what it is: the key's own name, a label of the key's words, a type or a sibling name."""
    lowered = value.lower()
    squeezed = lowered.replace("-", "_").strip("_")
    own = re.sub(r"[-_.]", "", key.lower())
    if squeezed in (key.lower().replace("-", "_").strip("_"), word.lower()) or squeezed in _EXAMPLE_VALUES:
        return True
    if re.sub(r"[-_.]", "", lowered) == own:
        return True  # OtpCredentials: "otp-credentials", AWS_S3_KEY = "aws.s3.key"
    if lowered.endswith(("-password", "_password", "-passwd", "_passwd")) or lowered.startswith("your-"):
        return True  # rest-of-my-password, your-api-key
    user, colon, password = value.partition(":")
    if colon and ":" not in password and " " not in value and _repeats_user(user, password):
        return True  # `chroma_client_auth_credentials="admin:admin"`
    return (
        values.is_label(value, values.key_words(key))
        or values.is_type_name(value, word)
        or values.is_named_for(value, word)
        or values.shares_key_stem(value, key)
        or values.is_key_name(value)
    )


def _not_a_credential(value: str) -> bool:
    """Data, a sentence, a run of the alphabet, encoding test data, a template built at run time, an elided
    example, a name or an id of what holds a secret: nothing of these is a credential, whatever key it follows."""
    bare = value.strip("`")
    return (
        bare.lower() in _NOT_VALUES
        or bare.lower().rstrip(".") in _NOT_VALUES  # `…_DEFAULT_CREDENTIALS=true.`, ending a sentence
        or values.is_attack_technique(bare)
        or values.is_resource_name(bare)
        or values.is_amazon_id(bare)
        or _decodes_to_phrase(bare)
        or bare.lower() in _EXAMPLE_VALUES
        or values.is_data(bare)
        or values.is_sentence(bare)
        or values.is_sequence(bare)
        or values.is_counting_hex(bare)
        or values.escapes_non_ascii(bare)
        or "${" in bare  # `secret${i}`: a template literal
        or _FORMAT_FIELD.search(bare) is not None  # `'latest/{0}'.format(…)`: a template of str.format
        or "..." in bare  # `eyJhbGciOi...`, `ACEGmnoq#1rstu2...BDFH3vx`: cut short in the docs
        or "…" in bare
        or bare.endswith("/aws4_request")  # `Credential=AKIA…/20220524/us-east-1/s3/aws4_request`: a scope
        or values.is_phrase(bare)
        or values.is_arn(bare)
        or values.is_alphabet_walk(bare)
        or _LETTER_RUNS.fullmatch(bare) is not None
        or values.is_public_key(bare)
        or _REGEX_CLASS.match(bare) is not None  # `client_secret=\w+` in a pattern that masks one
    )


_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,4096}={0,2}")


def _decodes_to_phrase(value: str) -> bool:
    """Base64 of a label or a phrase of no content (`bm90IG15IHJlYWwgcGFzc3dvcmQ=`, "not my real password"): an
    example of encoding one. A generated secret's base64 decodes to bytes, not to words."""
    if len(value) % 4 or not _BASE64.fullmatch(value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return False
    return decoded.isprintable() and (values.is_phrase(decoded) or values.is_label(decoded))


_FORMAT_FIELD = re.compile(r"\{[\w.]{0,40}\}")
_REGEX_CLASS = re.compile(r"\\[wdsSWD][+*]")


def _in_doctest(text: str, at: int) -> bool:
    """Whether `at` is on a line of a doctest (`>>> `, `... `) or of the answer it prints (the lines after one,
    up to a blank line): a documentation example."""
    lines = _lines_back(text, at)
    if _doctest_line(next(lines).strip()):
        return True
    for line in lines:
        stripped = line.strip()
        if not stripped:
            return False
        if _doctest_line(stripped):
            return True
    return False


def _lines_back(text: str, at: int, most: int = 30, reach: int = 4000) -> Iterator[str]:
    """The line of `at` (up to it), then the lines before it, nearest first: at most `most` lines within `reach`
    characters, so a long line of JSON costs no more than a short one."""
    low, end = max(0, at - reach), at
    for _ in range(most):
        newline = text.rfind("\n", low, end)
        yield text[newline + 1 if newline >= 0 else low : end]
        if newline < 0:
            return
        end = newline


def _doctest_line(stripped: str) -> bool:
    return stripped in (">>>", "...") or stripped.startswith((">>> ", "... "))


def _is_code(match: re.Match[str], value: str) -> bool:
    """A bare value that is code: a call, an index, an attribute path, an expression, a variable of the same text,
    or the next word of a sentence (`pwd: expected bytes`)."""
    lowered = value.lower()
    called = _CALL.match(_POWER.sub("", _UNPACKING.sub("", value)))  # `Credential(**obo_kwargs)`, `randrange(2**64)`
    if called or lowered in _CODE_WORDS or value in _MINIFIED_BOOLEANS:
        return True  # a call, an index, minified code's `!1`
    if _DOTTED.fullmatch(value) and _WORD_PART.search(value):
        return True  # a call, an index, an attribute: config['password'], getpass(), self.password
    leading = _LEADING_NAME.match(value)
    if leading and leading.group().lower() in _CODE_WORDS and value[leading.end() :][:1] in ".(:[":
        return True  # this.#c(), lambda: cred
    dotted = _DOTTED.match(value)
    if dotted and _WORD_PART.search(dotted.group()) and value[dotted.end() :][:1] in "(:[?!=|&":
        return True  # i.fail:(...), e.crossOrigin===`anonymous`?…, r.ctrlKey||!1: an operator of minified code
    text, at = match.string, match.start(match.lastgroup or "bare")
    if dotted and _WORD_PART.search(dotted.group()) and value[dotted.end() :][:1] in "+*":
        root = _LEADING_NAME.match(value)
        if root and _named_elsewhere(text, root.group(), at):
            return True  # o.key=s.C0.ESC+t: arithmetic on an attribute of a name of the text
    if _PRODUCT.match(value) or (_IDENTIFIER.fullmatch(value) and _INFIX.match(text, match.end())):
        return True  # styleKey=2097152*D[0]+D[1], `shared secret = PUBKEYtheirs * PRIVATEKEYours`
    if dotted and dotted.end() == len(value):
        root = _LEADING_NAME.match(value)
        if root and _named_elsewhere(text, root.group(), at):
            return True  # UIStrings$18.fast4G, where UIStrings$18 is defined in the same text
    if _IDENTIFIER.fullmatch(value) and _named_elsewhere(text, value, at):
        return True
    operand = _OPERAND.match(value)
    name = operand.group(1) or operand.group(2) if operand else None
    if name and _named_elsewhere(text, name, at + value.index(name)):
        return True  # `!!r`, `e?e.substring(0,10)`: a negation or a ternary on a name of the text
    return _sentence_goes_on(match)


#: A number times an index or a call (`2097152*D[0]`), as minified code writes a product.
_PRODUCT = re.compile(r"\d+[*/][A-Za-z_$][\w$.]*[\[(]")
#: After a name, an operator between spaces and another operand: an expression (`PUBKEYtheirs * PRIVATEKEYours`).
_INFIX = re.compile(r"[ \t]+[*/%^][ \t]+[A-Za-z_$(]")


#: A name negated (`!!r`), asked a ternary's question (`e?…`) or given a default (`_t??xe(39)`), as minified code
#: writes it.
_OPERAND = re.compile(r"!{1,2}([A-Za-z_$][\w$]*)$|([A-Za-z_$][\w$]*)\?\??[A-Za-z_$!]")


#: Words joined by dashes, as a description starts (`Multiple-system operator`, `Base64-encoded key`,
#: `google-auth credential`): a part with digits has a word's letters before them.
_COMPOUND = re.compile(r"(?:[A-Za-z]+|[A-Za-z]{3,}\d{1,3})(?:-(?:[A-Za-z]+|[A-Za-z]{3,}\d{1,3}))*-[A-Za-z]{3,}")


def _sentence_goes_on(match: re.Match[str]) -> bool:
    """After `key: word`, a space and another word on the same line: prose (`they need not be secret: IVs are
    ...`, a field's description `password: Required. Input only.`); a `KEY: value` of YAML or a header ends with
    its value."""
    text, end = match.string, match.end()
    colon = ":" in text[match.end("word") : match.start(match.lastgroup or "bare")]
    value = _value_of(match)
    word = value.rstrip(".:")  # `Required.`, `DEPRECATED:`: the first word of a description
    plain = word.isalpha() or _COMPOUND.fullmatch(word) is not None
    wordlike = plain and len(value) - len(word) <= 1  # `password: Xk92jd0 from 10.0.0.1` stays a secret
    if text[end : end + 2] == "'s":
        end += 2  # a possessive: `password: Account's password.`
    follows = text[end + 1 : end + 2]
    return colon and wordlike and text[end : end + 1] == " " and (follows.isalpha() or follows == "`")


def _named_elsewhere(text: str, name: str, at: int) -> bool:
    """Whether `name` occurs as a whole word in `text` somewhere else than at `at`, and not as a value there (after
    `=` or `:`): a variable of the code. The same password given twice (`DB_PASSWORD=X`, `REDIS_PASSWORD=X`, or
    `postgres://app:X@db`) is a value both times, and a secret."""
    start = text.find(name)
    while start != -1:
        end = start + len(name)
        whole = (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_$")) and (
            end == len(text) or not (text[end].isalnum() or text[end] in "_$")
        )
        if whole and start != at and not _assigned_at(text, start):
            return True
        start = text.find(name, start + 1)
    return False


def _assigned_at(text: str, start: int) -> bool:
    """Whether the word at `start` is a value: the last character before it, spaces and quotes aside, is `=`/`:`."""
    before = start - 1
    while before >= 0 and text[before] in " \t'\"":
        before -= 1
    return before >= 0 and text[before] in "=:"


#: Key words that make a key whatever is glued before them (PGPASSWORD, MYSQLPASSWORD, userpassword).
_GLUED_WORDS = frozenset({"password", "passwd", "passphrase"})
# Glued prefixes that make a key of `key`, `token` or `secret` (apikey, authtoken, clientsecret).
_KEY_PREFIXES = ("api", "auth", "access", "client", "secret", "private", "bearer", "refresh", "session", "db", "app")


def _value_of(match: re.Match[str]) -> str:
    start, end = _value_span(match)
    return match.string[start:end]


_TUPLE_TARGET = re.compile(r"(?:^|[\n;(])[ \t]*((?:[A-Za-z_][\w.]{0,60}[ \t]*,[ \t]*){1,8})$")
_QUOTED_ITEM = re.compile(r"""[ \t]*(?:"([^"\\\r\n]{0,4096})"|'([^'\r\n]{0,4096})')[ \t]*(,?)""")


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """Where the key's value is: the group that matched, or, when the key is one of several names assigned at
    once (`user, password = "wile", "coyote"`), the quoted value at the key's place on the right."""
    group = match.lastgroup or "bare"  # the value group closes last
    span = match.span(group)
    text = match.string
    key_start = match.start() - len(_key_before(text, match.start()))
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


def _basic_credentials(value: str) -> str | None:
    """The `user:password` that `Basic` is followed by, decoded; None for the word basic in prose."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    if b":" not in decoded or not all(32 <= b < 127 for b in decoded):
        return None
    return decoded.decode()


def _basic(value: str) -> bool:
    """Basic credentials whose password is not a documentation example (`me:pass`) nor its user's (`guest:guest`)."""
    credentials = _basic_credentials(value) if _real(value) else None
    if credentials is None:
        return False
    user, _, password = credentials.partition(":")
    return not _example_password(password) and not _repeats_user(user, password)


def _repeats_user(user: str, password: str) -> bool:
    """A password that is a label of its user's name (`guest:guest`, `admin:admin1`): a default login named after
    its user, as a label is after its key (`minio123` after `MINIO_SECRET_KEY`)."""
    return bool(user) and values.is_label(password, values.key_words(user))


#: A URL template's words for its parts (`github://org:repo@sha/path`): its password names a part.
_URL_PARTS = frozenset({"repo", "org", "owner", "sha", "ref", "branch", "host", "bucket", "project", "path"})


def _example_password(password: str) -> bool:
    lowered = password.lower()
    return (
        lowered in _EXAMPLE_VALUES or lowered in _URL_PARTS or values.is_label(password) or values.is_sequence(password)
    )


def _not_a_port(value: str) -> bool:
    """A URL's password: not a port (host:port@), nor a documentation example (`http://user:pass@host`,
    `a%20secret`); of a list of hosts (`foo.com:123,user:pw@bar.com`), the part after the last host."""
    password = unquote(value).rpartition(",")[2]
    password = password.rpartition(":")[2] if "," in value else password
    return _real(value) and not password.isdigit() and not _example_password(password)


#: Domains kept for documentation (RFC 2606, RFC 6761): a credential for one is an example.
_DOCUMENTATION_DOMAIN = re.compile(
    r"(?:^|[.@])(?:example\.(?:com|org|net)|[\w-]+\.(?:example|test|invalid))$", re.IGNORECASE
)
_HOST = re.compile(r"[\w.-]{1,253}")


def _connection_kind(match: re.Match[str]) -> str:
    """A URL's password, unless the URL is of a documentation domain (`https://abc:xyz@example.com`), its host's
    or its user's (`john%40example.com:pw@localhost`), or the password repeats its user (`guest:guest`) or is a
    sample account's (`scott:tiger`)."""
    host = _HOST.match(match.string, match.end() - 1)
    user = unquote(match.string[match.start() + 3 : match.start("v") - 1])
    documented = (host is not None and _DOCUMENTATION_DOMAIN.search(host.group())) or _DOCUMENTATION_DOMAIN.search(user)
    password = unquote(match.group("v"))
    default = _repeats_user(user, password) or _SAMPLE_LOGINS.get(user.lower()) == password.lower()  # guest:guest
    return "" if documented or default else "connection-password"


_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{40}")


def _has_key_body(value: str) -> bool:
    """A private key's base64 follows its header: `indexOf("-----BEGIN PRIVATE KEY-----")` is code about one."""
    return _KEY_BODY.search(value) is not None and not any(mark in value for mark in ("...", "…", "EXAMPLE"))


_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private-key",
        ("-----begin ",),
        # PEM or OpenSSH, raw or JSON-escaped (a service-account file): through its END line, or through the
        # base64 that follows when the END line was cut off.
        _compile(
            r"-----BEGIN (?P<label>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:.{0,20000}?-----END (?P=label)-----|[A-Za-z0-9+/=\s\\:,-]{0,20000})",
            re.DOTALL,
        ),
        check=_has_key_body,
    ),
    _Detector(
        "private-key",
        ("putty-user-key-file-",),
        _compile(r"PuTTY-User-Key-File-\d: .{0,12000}?Private-MAC: [0-9a-f]{20,128}", re.DOTALL),
    ),
    _Detector(
        "aws-access-key",
        ("akia", "asia", "abia", "acca", "a3t"),
        _compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
        check=_real,
    ),
    _Detector(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        _compile(r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])"),
        check=_real,
    ),
    _Detector(
        "github-token",
        ("github_pat_",),
        _compile(r"github_pat_[A-Za-z0-9_]{50,255}(?![A-Za-z0-9_])"),
        check=_real,
    ),
    _Detector(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-"),
        _compile(r"gl(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_-]{20,64}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "slack-token",
        ("xox",),
        _compile(r"xox[abposre]-[0-9A-Za-z-]{10,250}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "slack-webhook",
        ("https://hooks.slack.com/",),
        _compile(r"https://hooks\.slack\.com/(?:services|workflows)/T[A-Za-z0-9_]{4,20}/[A-Za-z0-9_/]{8,120}"),
        check=_real,
    ),
    _Detector(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        _compile(r"[sr]k_(?:live|test)_[0-9a-zA-Z]{24,247}(?![\w])"),
        check=_real,
    ),
    _Detector(
        "anthropic-api-key",
        ("sk-ant-",),
        _compile(r"sk-ant-[A-Za-z0-9_-]{32,250}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "openai-api-key",
        ("sk-",),
        _compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{32,250}(?![\w-])"),
        check=_mixed_token,
    ),
    _Detector(
        "google-api-key",
        ("aiza",),
        _compile(r"AIza[0-9A-Za-z_-]{35}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "google-oauth-token",
        ("ya29.",),
        _compile(r"ya29\.[0-9A-Za-z_-]{20,2000}"),
        check=_real,
    ),
    _Detector(
        "google-oauth-secret",
        ("gocspx-",),
        _compile(r"GOCSPX-[0-9A-Za-z_-]{28}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "azure-storage-key",
        ("accountkey=", "sharedaccesskey="),
        _compile(r"(?i:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{40,100}={0,2})"),
        group="v",
        check=_real,
    ),
    _Detector(
        "azure-sas-token",
        ("sig=",),
        _compile(r"sig=(?P<v>[A-Za-z0-9%+/=]{30,200})"),
        group="v",
        check=_real,
        word_start=False,  # ?sig= or &sig=
    ),
    _Detector(
        "npm-token",
        ("npm_",),
        _compile(r"npm_[A-Za-z0-9]{36}(?![\w])"),
        check=_mixed_token,
    ),
    _Detector(
        "pypi-token",
        ("pypi-ageichlwas5vcmc",),
        _compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,400}"),
    ),
    _Detector(
        "sendgrid-key",
        ("sg.",),
        _compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "huggingface-token",
        ("hf_",),
        _compile(r"hf_[A-Za-z0-9]{34,40}(?![\w-])"),
        check=_mixed_token,
    ),
    _Detector(
        "jwt",
        ("eyj",),
        _compile(r"eyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{0,4000}(?![\w-])"),
        check=_real,
    ),
    _Detector(
        "bearer-token",
        ("bearer",),
        _compile(r"(?i:bearer)[ \t]{1,4}(?P<v>[A-Za-z0-9._~+/-]{16,4000}=*)"),
        group="v",
        check=_real,
    ),
    _Detector(
        "basic-auth",
        ("basic",),
        _compile(r"(?i:basic)[ \t]{1,4}(?P<v>[A-Za-z0-9+/]{8,2000}={0,2})(?![\w+/=])"),
        group="v",
        check=_basic,
    ),
    _Detector(
        "connection-password",
        ("://",),
        # scheme://user:password@host — postgres, mysql, mongodb+srv, redis, amqp, https, ...
        _compile(r"://[^\s:/@'\"<>]{0,128}:(?P<v>[^\s@/'\"<>]{1,256})@[\w.-]"),
        group="v",
        check=_not_a_port,
        kind_of=_connection_kind,
        word_start=False,
    ),
    _Detector(
        "password",
        ("pass", "pwd", "secret", "key", "token", "credential"),  # where each key word of the pattern starts
        # key = value, key: value, "key": "value", KEY=value (env). Matched at the word; the key's name is read
        # back from it (see _keyword_kind).
        _compile(
            r"(?P<word>passw(?:or)?d|passphrase|pass|pwd|secret|key|token|credentials?)(?![A-Za-z0-9])"
            + _ASSIGN
            + _VALUE,
            re.IGNORECASE,
        ),
        group="",  # the quoted or bare value, whichever matched
        check=_assigned_value,
        kind_of=_keyword_kind,
        word_start=False,
    ),
)

#: Every kind of secret a finding may name (a detector's, or a `key = value` key's): `secrets_allow`'s words.
KINDS = SECRET_KINDS
DETECTOR_KINDS: frozenset[str] = frozenset(d.kind for d in _DETECTORS)

_ANCHORS: tuple[str, ...] = tuple(sorted({a for d in _DETECTORS for a in d.anchors}))
# One Aho-Corasick pass finds every anchor at once: a text with none pays that pass and nothing else (about 60
# times quicker on 1 MB than one `in` per anchor, and under a microsecond on a tiny result).
_AUTOMATON = AhoCorasick(list(_ANCHORS))
_BYTES_AUTOMATON = BytesAhoCorasick([anchor.encode() for anchor in _ANCHORS])


def _ascii_lower(text: str) -> str:
    """Lower case with the same length and offsets as `text` (`str.lower` can lengthen a few letters)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def may_hold_secret(data: bytes | str) -> bool:
    """The prefilter: whether the text holds any literal a detector starts from (the fast lane asks it of the
    raw bytes of a result, and relays them unread on False)."""
    if isinstance(data, bytes):
        return bool(_BYTES_AUTOMATON.find_matches_as_indexes(data.lower()))
    return bool(_AUTOMATON.find_matches_as_indexes(data.lower()))


def may_hold_secret_in(result: BaseModel) -> bool:
    """The prefilter over every string of a protocol result (texts, URIs, names, `_meta`, structured content):
    False means `Redactor.redact_result` would change nothing. Here, next to `may_hold_secret`, so the result
    boundary asks it in one call."""
    return may_hold_secret(result.__pydantic_serializer__.to_json(result, by_alias=True, exclude_none=True))


def json_may_hold_secret(value: Any) -> bool:
    """The prefilter over every string of a JSON value."""
    if isinstance(value, str):
        return may_hold_secret(value)
    if isinstance(value, dict):
        return any(json_may_hold_secret(item) for item in value.values())
    if isinstance(value, list):
        return any(json_may_hold_secret(item) for item in value)
    return False


def _anchor_positions(lowered: str) -> dict[str, list[int]]:
    """Where each anchor starts in the text, ascending."""
    positions: dict[str, list[int]] = {}
    for index, start, _ in _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True):
        positions.setdefault(_ANCHORS[index], []).append(start)
    return positions


def _matches(detector: _Detector, text: str, positions: dict[str, list[int]]) -> Iterator[Finding]:
    for anchor in detector.anchors:
        matched_until = 0
        for at in positions.get(anchor, ()):
            if at < matched_until:
                continue  # inside the last match: `password=password=...` costs one match, not one per word
            if detector.word_start and at > 0 and (text[at - 1].isalnum() or text[at - 1] in "_-"):
                continue  # inside a longer word
            match = detector.pattern.match(text, at)
            if match is None:
                continue
            matched_until = match.end()
            group = detector.group
            if group == "":
                group = match.lastgroup or "bare"  # the value group closes last
            start, end = match.span(group) if detector.group != "" else _value_span(match)
            kind = detector.kind_of(match) if detector.kind_of is not None else detector.kind
            value = text[start:end]
            if kind and (detector.check is None or detector.check(value)):
                yield Finding(start, end, kind, value)


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, in order, none overlapping."""
    positions = _anchor_positions(_ascii_lower(text))
    if not positions:
        return []
    # Detector by detector, most specific first: a finding that overlaps one already kept is dropped, so a
    # GitHub token in `password=ghp_...` or in a URL's password is kept as a GitHub token.
    kept: list[Finding] = []
    for detector in _DETECTORS:
        for finding in _matches(detector, text, positions):
            if not any(finding.start < k.end and k.start < finding.end for k in kept):
                kept.append(finding)
    kept.sort(key=lambda finding: finding.start)
    return kept
