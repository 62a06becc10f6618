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
rules for those are in `harmless` and `values`; reading a match's key and value is `keyed`.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick
from pydantic import BaseModel

from offprompt.secret_kinds import SECRET_KINDS
from offprompt.secrets import values
from offprompt.secrets.exceptions import excepted
from offprompt.secrets.harmless import holds_none
from offprompt.secrets.keyed import (
    EXAMPLE_VALUES,
    SAMPLE_LOGINS,
    basic_credentials,
    is_real,
    key_before,
    random_looking,
    repeats_user,
    value_of,
    value_span,
)
from offprompt.secrets.scan import once, scanning
from offprompt.secrets.tests_code import in_made_up_place
from offprompt.syntax import EXPRESSION, NAME, code_language, defined_names, is_code_shaped, is_comment_line, read_value

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


def _mixed_token(value: str) -> bool:
    """A base62 key (OpenAI, npm, Hugging Face): upper and lower case and digits, unlike `sk-circle-bounce-1`."""
    return random_looking(value, 20) and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _bearer_token(value: str) -> bool:
    """A bearer token, not a name or a label of capitalised words (`Bearer ThisIsABearerToken` of a test), nor a
    challenge's parameter or an error code, lower-case words and `_` (`Bearer resource_metadata="…"`, RFC 6750's
    `insufficient_scope`): a generated token of 16 characters or more holds a digit or a capital."""
    snake = re.fullmatch(r"[a-z]+(?:_[a-z]+)*=?", value) is not None
    return is_real(value) and not snake and not values.is_camel_name(value) and not values.is_label(value)


def _hf_token(value: str) -> bool:
    """A Hugging Face token: base62 as `_mixed_token`, or of letters only in both cases (`hf_` and 34 letters),
    which no camel-case name of code is."""
    body = value[3:]
    letters = body.isalpha() and len(set(body)) >= 12 and not values.is_camel_name(body)
    return _mixed_token(value) or (letters and body.lower() != body and body.upper() != body and is_real(value))


def _aws_shaped(value: str) -> bool:
    """An AWS secret key's shape (40 of base64's letters, digits, `+` and `/`, both cases): one may start with `/`,
    which a path of words does not look like."""
    return (
        _AWS_SECRET.fullmatch(value) is not None
        and random_looking(value, 40)
        and value.lower() != value
        and value.upper() != value
    )


def _assigned_value(value: str) -> bool:
    """A value after `password=`: anything real that is not a type name, a boolean or a path."""
    return (
        is_real(value)
        and (value[:1] not in "/~." or _aws_shaped(value))
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
    r"""|(?P<bare>(?:[^\s"',;&<>)}\]\\]|\\(?![nrt]|u0026)){1,4096}))"""  # up to an escaped line break or &
)
_ASSIGN = r"""\\?["']?[ \t]{0,8}(?:=(?!=)|:=|:(?!:)|=>)[ \t]{0,8}"""  # `::` is a path, `==` a comparison
# A declaration with its type between the name and the value: Python's `password: str = "…"` (`Optional[str]`,
# `str | None`), TypeScript's `apiKey: string = "…"`, Rust's `PASSWORD: &'static str = "…"`, Kotlin's and Swift's
# `String?`. Tried before `_ASSIGN`, which would take the type for the value (`password: bool` is one).
# A type is a reference, a capitalised name or a lower-case string type: `if token: auth = "Bearer " + token` is
# a statement after a condition, not a declaration (case-sensitive inside the pattern, which ignores case).
_TYPE = (
    r"""(?-i:&(?:'static[ \t]+)?(?:mut[ \t]+)?[A-Za-z_][\w.]{0,60}|[A-Z][\w.]{0,60}|(?:str|string|bytes|any|char))"""
    r"""(?:\[[^\]=\n]{0,80}\]|<[^>=\n]{0,80}>)?\??"""
)
_TYPED = rf"""[ \t]{{0,8}}:[ \t]{{0,8}}{_TYPE}(?:[ \t]*\|[ \t]*{_TYPE}){{0,3}}[ \t]{{0,8}}=(?![=>])[ \t]{{0,8}}"""

_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")


def _keyword_kind(match: re.Match[str]) -> str:
    """The kind of a `key = value` secret, from the key's whole name; "" when the key holds none, when a row of
    the exceptions table excepts the value, or when the value is no literal of the text's syntax."""
    key = _key_of(match)
    value = value_of(match)
    kind = _kind_by_key(key.lower().replace("-", "_"), value) if key else ""
    if not kind or excepted(key, value, _rest_of_line(match)) or _not_a_literal(match, key, value):
        return ""
    return "" if holds_none(match, key, value) else kind  # the cheap tests first: `"key": "k0"`


def _rest_of_line(match: re.Match[str]) -> str:
    text = match.string
    end = value_span(match)[1]
    line_end = text.find("\n", end)
    return text[end : line_end if line_end >= 0 else len(text)][:200]


def _not_a_literal(match: re.Match[str], key: str, value: str) -> bool:
    """The value, read in the text's syntax, is code (a call, an attribute, a variable, a template's action; in a
    text of code any bare value but a `KEY=value` line's, however generated it looks: code quotes a secret's
    literal; a comment's generated-looking value stays), or a name of the text's own things that does not look
    generated."""
    text = match.string
    start, end, key_start = *value_span(match), match.start() - len(key) + len(match.group("word"))
    template = len(value) > 1 and value[0] == value[-1] == "`" and text[key_start - 1 : key_start] != "$"  # not Perl's
    reading = read_value(
        text,
        key,
        key_start,
        (start, end),
        quoted=(match.lastgroup or "bare") != "bare" or template,
        code=once(text, "code language", lambda: code_language(text)),
        names=once(text, "defined names", lambda: defined_names(text)),
    )
    generated = random_looking(value) and not is_code_shaped(value)
    in_comment = reading == EXPRESSION and is_comment_line(text, key_start)  # a comment's words are no code
    return (reading == EXPRESSION and not (in_comment and generated)) or (reading == NAME and not generated)


def _key_of(match: re.Match[str]) -> str:
    """The whole key whose last word matched (`DB_PASSWORD`, `clientSecret`), as the text spells it; "" when the
    word is not a key's (`bypass`, `monkey`, a handle's kind, `pass: 12` of a test summary)."""
    word = match.group("word")
    if match.string[match.start() - 1 : match.start()] == "⟦":
        return ""  # the word of a handle, ⟦secret:id kind⟧
    before = key_before(match.string, match.start())
    camel = before[-1:].islower() and word[0].isupper()  # userPassword, _authToken
    glued = before[-1:].isalnum() and not camel  # apikey, APIKEY, bypass, monkey
    if glued and not before.lower().endswith(_KEY_PREFIXES) and word.lower() not in _GLUED_WORDS:
        return ""  # PGPASSWORD and userpassword are keys; bypass, monkey and compass are not
    if word.lower() == "pass" and before[-1:] not in ("_", "-", "."):
        return ""  # "pass: 12, fail: 3" is a test summary; DB_PASS is a key
    return before + word


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
        random_looking(value, 8)
        and " " not in value  # `key = "6 days, 23:11:12"`: words, which a generated key or token never holds
        and not values.is_structured(value)
        and not values.is_camel_name(value)
        and not values.is_file_name(value)
    )
    if key.endswith("token"):
        return "token" if generated else ""
    return "api-key" if generated else ""


#: Key words that make a key whatever is glued before them (PGPASSWORD, MYSQLPASSWORD, userpassword).
_GLUED_WORDS = frozenset({"password", "passwd", "passphrase"})
# Glued prefixes that make a key of `key`, `token` or `secret` (apikey, authtoken, clientsecret).
_KEY_PREFIXES = ("api", "auth", "access", "client", "secret", "private", "bearer", "refresh", "session", "db", "app")


def _basic_kind(match: re.Match[str]) -> str:
    """Basic credentials, unless of a made-up word in a test's literal or a doc (`"Basic Ym9iOmtvbmc="`)."""
    password = (basic_credentials(match.group("v")) or "").partition(":")[2]
    return "" if not random_looking(password) and in_made_up_place(match.string, match.start("v")) else "basic-auth"


def _basic(value: str) -> bool:
    """Basic credentials whose password is not a documentation example (`me:pass`) nor its user's (`guest:guest`),
    read through what a test of encoding adds (`clientSecret%3D`, `clientSecret=`, `pass:word`)."""
    credentials = basic_credentials(value) if is_real(value) else None
    if credentials is None:
        return False
    user, _, password = credentials.partition(":")
    plain = unquote(password).replace(":", "").rstrip("=")
    return not _example_password(plain) and not repeats_user(user, password)


#: A URL template's words for its parts (`github://org:repo@sha/path`): its password names a part.
_URL_PARTS = frozenset({"repo", "org", "owner", "sha", "ref", "branch", "host", "bucket", "project", "path"})


def _example_password(password: str) -> bool:
    lowered = password.lower()
    return (
        lowered in EXAMPLE_VALUES
        or lowered in _URL_PARTS
        or values.is_label(password)
        or values.is_sequence(password)
        or bool(excepted("", password))
    )


def _not_a_port(value: str) -> bool:
    """A URL's password: not a port (host:port@), nor a documentation example (`http://user:pass@host`,
    `a%20secret`); of a list of hosts (`foo.com:123,user:pw@bar.com`), the part after the last host."""
    password = unquote(value).rpartition(",")[2]
    password = password.rpartition(":")[2] if "," in value else password
    return is_real(value) and not password.isdigit() and not _example_password(password)


#: Domains kept for documentation (RFC 2606, RFC 6761): a credential for one is an example.
_DOCUMENTATION_DOMAIN = re.compile(
    r"(?:^|[.@])(?:example\.(?:com|org|net)|[\w-]+\.(?:example|test|invalid))$", re.IGNORECASE
)
_HOST = re.compile(r"[\w.-]{1,253}")


def _connection_kind(match: re.Match[str]) -> str:
    """A URL's password, unless the URL is of a documentation domain (`https://abc:xyz@example.com`), its host's
    or its user's (`john%40example.com:pw@localhost`), or the password repeats its user (`guest:guest`), is a
    sample account's (`scott:tiger`) or a test's made-up word (`postgresql://user:p4ss@host/db` in test code), or
    the URL is a template whose port is a word (`http://proxyuser:proxypass@proxyhost:port`)."""
    host = _HOST.match(match.string, match.end() - 1)
    user = unquote(match.string[match.start() + 3 : match.start("v") - 1])
    documented = (host is not None and _DOCUMENTATION_DOMAIN.search(host.group())) or _DOCUMENTATION_DOMAIN.search(user)
    password = unquote(match.group("v"))
    default = repeats_user(user, password) or SAMPLE_LOGINS.get(user.lower()) == password.lower()  # guest:guest
    made_up = not random_looking(password) and in_made_up_place(match.string, match.start())
    template = host is not None and _WORD_PORT.match(match.string, host.end()) is not None  # `@proxyhost:port`
    return "" if documented or default or made_up or template else "connection-password"


#: A port written as a word, as a URL template does (`:port`, `:PORT`).
_WORD_PORT = re.compile(r":[A-Za-z_]+(?![\w.-])")


# From a variable list's name to its value: `", "value": ` in JSON (raw or escaped), or a YAML line break and
# `value: ` (a real or an escaped newline).
_LIST_VALUE = (
    r"""\\?["']?[ \t]{0,8},?(?:[ \t]{0,8}|(?:\r?\n|(?:\\r)?\\n)(?:[^\n]{0,80}?[ \t|])?[ \t]{0,40})"""
    r"""\\?"?value\\?"?[ \t]{0,8}:[ \t]{0,8}"""
)
# What comes before a variable list's name: `"name": "`, `"key": "` or YAML's `- name: ` / `name: `.
_LIST_NAME = re.compile(r"""(?:\\?"(?:name|key)\\?"[ \t]{0,8}:[ \t]{0,8}\\?"|(?:-[ \t]{1,8})?name:[ \t]{0,8}["']?)$""")


def _listed_kind(match: re.Match[str]) -> str:
    """The kind of a variable list's value: its name's, when the word is the end of an entry's name."""
    key_start = match.start() - len(key_before(match.string, match.start()))
    if _LIST_NAME.search(match.string, max(0, key_start - 40), key_start) is None:
        return ""
    return _keyword_kind(match)


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
        check=is_real,
    ),
    _Detector(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        _compile(r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])"),
        check=is_real,
    ),
    _Detector(
        "github-token",
        ("github_pat_",),
        _compile(r"github_pat_[A-Za-z0-9_]{50,255}(?![A-Za-z0-9_])"),
        check=is_real,
    ),
    _Detector(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-"),
        _compile(r"gl(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_-]{20,64}(?![\w-])"),
        check=is_real,
    ),
    _Detector("slack-token", ("xox",), _compile(r"xox[abposre]-[0-9A-Za-z-]{10,250}(?![\w-])"), check=is_real),
    _Detector(
        "slack-webhook",
        ("https://hooks.slack.com/",),
        _compile(r"https://hooks\.slack\.com/(?:services|workflows)/T[A-Za-z0-9_]{4,20}/[A-Za-z0-9_/]{8,120}"),
        check=is_real,
    ),
    _Detector(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        _compile(r"[sr]k_(?:live|test)_[0-9a-zA-Z]{24,247}(?![\w])"),
        check=is_real,
    ),
    _Detector("anthropic-api-key", ("sk-ant-",), _compile(r"sk-ant-[A-Za-z0-9_-]{32,250}(?![\w-])"), check=is_real),
    _Detector(
        "openai-api-key",
        ("sk-",),
        _compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{32,250}(?![\w-])"),
        check=_mixed_token,
    ),
    _Detector("google-api-key", ("aiza",), _compile(r"AIza[0-9A-Za-z_-]{35}(?![\w-])"), check=is_real),
    _Detector("google-oauth-token", ("ya29.",), _compile(r"ya29\.[0-9A-Za-z_-]{20,2000}"), check=is_real),
    _Detector("google-oauth-secret", ("gocspx-",), _compile(r"GOCSPX-[0-9A-Za-z_-]{28}(?![\w-])"), check=is_real),
    _Detector(
        "azure-storage-key",
        ("accountkey=", "sharedaccesskey="),
        _compile(r"(?i:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{40,100}={0,2})"),
        group="v",
        check=is_real,
    ),
    _Detector(
        "azure-sas-token",
        ("sig=",),
        _compile(r"sig=(?P<v>[A-Za-z0-9%+/=]{30,200})"),
        group="v",
        check=is_real,
        word_start=False,  # ?sig= or &sig=
    ),
    _Detector("npm-token", ("npm_",), _compile(r"npm_[A-Za-z0-9]{36}(?![\w])"), check=_mixed_token),
    _Detector("pypi-token", ("pypi-ageichlwas5vcmc",), _compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,400}")),
    _Detector("sendgrid-key", ("sg.",), _compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"), check=is_real),
    _Detector("huggingface-token", ("hf_",), _compile(r"hf_[A-Za-z0-9]{34,40}(?![\w-])"), check=_hf_token),
    _Detector(
        "jwt",
        ("eyj",),
        _compile(r"eyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{0,4000}(?![\w-])"),
        check=is_real,
    ),
    _Detector(
        "bearer-token",
        ("bearer",),
        _compile(r"(?i:bearer)[ \t]{1,4}(?P<v>[A-Za-z0-9._~+/-]{16,4000}=*)"),
        group="v",
        check=_bearer_token,
    ),
    _Detector(
        "basic-auth",
        ("basic",),
        _compile(r"(?i:basic)[ \t]{1,4}(?P<v>[A-Za-z0-9+/]{8,2000}={0,2})(?![\w+/=])"),
        group="v",
        check=_basic,
        kind_of=_basic_kind,
    ),
    _Detector(
        "basic-auth",
        ('"auth"', '\\"auth\\"'),
        # Docker's config.json (`{"auths": {"registry": {"auth": "<base64 of user:password>"}}}`), raw or inside a
        # JSON string.
        _compile(r'\\?"auth\\?"[ \t]{0,8}:[ \t]{0,8}\\?"(?P<v>[A-Za-z0-9+/]{8,2000}={0,2})\\?"'),
        group="v",
        check=_basic,
        word_start=False,
    ),
    _Detector(
        "password",
        ("pass", "pwd", "secret", "key", "token", "credential"),
        # A variable list's entry, `{"name": "DB_PASSWORD", "value": "…"}` (ECS, GitHub Actions, `{"key": …}` of
        # Terraform's outputs) or Kubernetes' `- name: DB_PASSWORD` with `value: …` on the next line: the value
        # is the key's, as in `DB_PASSWORD=…`.
        _compile(
            r"(?P<word>passw(?:or)?d|passphrase|pass|pwd|secret|key|token|credentials?)(?![A-Za-z0-9])"
            + _LIST_VALUE
            + _VALUE,
            re.IGNORECASE,
        ),
        group="",
        check=_assigned_value,
        kind_of=_listed_kind,
        word_start=False,
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
        # key = value, key: value, "key": "value", KEY=value (env), key: Type = value. Matched at the word; the
        # key's name is read back from it (see _keyword_kind).
        _compile(
            r"(?P<word>passw(?:or)?d|passphrase|pass|pwd|secret|key|token|credentials?)(?![A-Za-z0-9])"
            + f"(?:{_TYPED}|{_ASSIGN})"
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
            start, end = match.span(group) if detector.group != "" else value_span(match)
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
    # The kept findings never overlap, so in the order of their starts their ends are in order too: the one kept
    # finding a new one could overlap is the last that starts before the new one ends (a bisection, not a scan of
    # every finding kept: a result of 40,000 passwords took a minute).
    kept: list[Finding] = []
    starts: list[int] = []
    with scanning(text):
        for detector in _DETECTORS:
            for finding in _matches(detector, text, positions):
                at = bisect_left(starts, finding.end)
                if at and kept[at - 1].end > finding.start:
                    continue
                kept.insert(at, finding)
                starts.insert(at, finding.start)
    return kept
