"""The exceptions of the `key = value` rule as data: one table, each row a rule id, what it matches (a regular
expression over the value, and over the key when the row names one), a false alarm it ends and a secret of the same
shape it keeps (tests/secrets/test_exceptions.py checks both of every row). One small engine reads it; users add
rows of their own with `secrets_allowlist` in the config (docs/secrets.md).

A row matches the whole value (`re.fullmatch`, quotes aside), case-insensitively, and the key when it names one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["ROWS", "Row", "add_rows", "excepted", "set_user_rows", "user_rows"]


@dataclass(frozen=True, slots=True)
class Row:
    """One exception: values (and keys) it matches, and what it ends and keeps."""

    id: str
    value: str  # a regular expression the whole value matches
    ends: str = ""  # a false alarm it ends (a text with no secret)
    keeps: str = ""  # a secret of the same shape it keeps (a text whose one finding is a secret)
    key: str = ""  # a regular expression the key's name holds (search), "" for any key
    after: str = ""  # a regular expression the rest of the value's line holds (search), "" for any
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    key_pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    after_pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", re.compile(self.value, re.IGNORECASE))
        object.__setattr__(self, "key_pattern", re.compile(self.key, re.IGNORECASE) if self.key else None)
        object.__setattr__(self, "after_pattern", re.compile(self.after, re.IGNORECASE) if self.after else None)

    def matches(self, key: str, value: str, after: str) -> bool:
        return (
            self.pattern.fullmatch(value) is not None
            and (self.key_pattern is None or self.key_pattern.search(key) is not None)
            and (self.after_pattern is None or self.after_pattern.search(after) is not None)
        )


ROWS: tuple[Row, ...] = (
    Row(
        "replace-comment",
        # A value whose line's comment tells the reader to replace it (a doc's `password: "P@ssw0rd"  # Replace`).
        r".+",
        after=r"^[\"']?[ \t]+(?:#|//)[ \t]*(?:replace|change|set|use your|put your)\b",
        ends='      password: "P@ssw0rd"      # Replace with a strong password\n',
        keeps='      password: "P@ssw0rd"      # rotated on 2026-05-01\n',
    ),
    Row(
        "option-word",
        # Booleans, nulls, type names, switches and enums a key of a secret takes as a setting (fetch's
        # `credentials: 'include'`, ansible's `update_password: always`, a Docker image's `…_EMPTY_PASSWORD: yes`,
        # Configure's `d_pwpasswd='define'`, Perl's undef).
        r"(?:null|none|true|false|undefined|nil|n/a|na|empty|yes|no|y|n|always|never|on_create|on_change|on_success"
        r"|string|str|bool|boolean|int|integer|float|number|bytes|dict|list|object|any|unknown|char|secretstr"
        r"|secretbytes|include|omit|same-origin|required|optional|auto|enabled|disabled|on|off|default|define|undef"
        r"|hashed|encrypted)"  # Laravel's casts: the field is stored hashed
        r"\.?",  # ending a sentence: `…_DEFAULT_CREDENTIALS=true.`
        ends="services:\n  db:\n    environment:\n      MYSQL_ALLOW_EMPTY_PASSWORD: yes\n",
        keeps="services:\n  db:\n    environment:\n      MYSQL_PASSWORD: yes-Xk92jd0q\n",
    ),
    Row(
        "placeholder-words",
        # A value that tells the reader to put one in: CHANGE_ME, REPLACE_ME, TODO, FIXME.
        r"(?:please[_-]?)?(?:change[_-]?(?:me|it|this)|replace[_-]?(?:me|this|with[_-]?\w*)|todo|fixme|tbd)",
        ends="grafana:\n  adminPassword: CHANGE_ME\n",
        keeps="grafana:\n  adminPassword: CHANGE_Xk92jd0q\n",
    ),
    Row(
        "key-word-label",
        # A value of letters that spells its key's word: a name (`secret: userssecret`, `secret: secretName`).
        r"(?=[a-z_-]*secret)[a-z_-]{6,40}",
        key=r"secret$",
        ends="spec:\n  basicAuth:\n    secret: userssecret\n",
        keeps="spec:\n  basicAuth:\n    secret: usersXk92jd0q\n",
    ),
    Row(
        "version-requirement",
        # A dependency's version requirement (yarn.lock's `path-key: "npm:^3.1.0"`).
        r"(?:npm:)?(?:[\^~]|[<>]=?)?\d{1,4}(?:\.\d{1,6}){1,3}(?:-[\w.]+)?",
        ends='  dependencies:\n    path-key: "npm:^3.1.0"\n',
        keeps='  dependencies:\n    path-key: "npm:Xk92jd0qLm7vTb3z"\n',
    ),
    Row(
        "keyboard-walk",
        # A password typed along the keyboard's rows (`asdfqwer1234asdf` of a test's URL).
        r"(?:asdf|qwer|zxcv|uiop|hjkl|1234|5678|abcd)+",
        ends="$config = ['password' => 'asdfqwer1234asdf'];\n",
        keeps="$config = ['password' => 'asdfXk92jd0qLm7v'];\n",
    ),
    Row(
        "template-at-run-time",
        # A template literal's or a shell's substitution: the value is built at run time (`` `secret${i}` ``).
        r".*\$\{.*",
        ends="password: `secret${i}`,\n",
        keeps='password: "s3cr3t$i9",\n',
    ),
    Row(
        "format-template",
        # A template of str.format (`'latest/{0}'.format(system)`).
        r".*\{[\w.]{0,40}\}.*",
        ends="params.key = 'latest/{0}'.format(system)\n",
        keeps="params.key = 'latest/Xk92jd0qLm7v'\n",
    ),
    Row(
        "cut-short",
        # An example cut short in the docs (`eyJhbGciOi...`, `…2...BDFH…`).
        r".*(?:\.\.\.|…).*",
        ends='verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...",\n',
        keeps='verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9x",\n',
    ),
    Row(
        "sigv4-scope",
        # A SigV4 credential scope (`Credential=AKIA…/20220524/us-east-1/s3/aws4_request`).
        r".*/aws4_request",
        ends="Credential=mock_access_key/20220524/us-east-1/cognito-idp/aws4_request, SignedHeaders=host\n",
        keeps="Credential=Xk92jd0qLm7v/20220524, SignedHeaders=host\n",
    ),
    Row(
        "masking-pattern",
        # A regular expression's class right after the key: a pattern that masks a secret (`client_secret=\w+`).
        r"(?-i:\\[wdsSWD][+*]).*",
        ends='url.replace(/\\bclient_secret=\\w+/g, "client_secret=[REDACTED]")\n',
        keeps="client_secret=Xk92jd0q+/g\n",
    ),
    Row(
        "escaped-white-space",
        # Only escaped white space: a separator (`credential = "\\n".join(parts)`).
        r"(?:\\{1,2}[nrt]|[ \t])+",
        ends='credential = "\\n".join(parts)\n',
        keeps='credential = "Xk92jd0q"\n',
    ),
    Row(
        "perl-pattern",
        # A Perl pattern (`my $Token = qr/[\x21\x23-\x27]/`).
        r"(?-i:qr)[/{(!|#\[<].*",
        ends="my $Token = qr/[\\x21\\x23-\\x27\\x2A]/;\n",
        keeps="my $Token = 'qX7r2Lm9Zt4Wv8Kp';\n",
    ),
    Row(
        "next-option",
        # A command line's next option as the value (`(CREDENTIAL : --location=LOCATION …)`).
        r"--[a-z][\w-]*(?:=.*)?",
        ends="gcloud iam oauth-clients credentials delete (CREDENTIAL : --location=LOCATION --oauth-client=OAUTH)\n",
        keeps="CREDENTIAL : Xk92jd0qLm\n",
    ),
    Row(
        "volume-key-file",
        # A volume's key file (`rd.luks.key=<uuid>=/keyfile`).
        r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}=/.*",
        ends="rd.luks.key=b40f1abf-2a53-400a-889a-2eccc27eaa40=/keyfile:LABEL=keydev\n",
        keeps="rd.luks.key=b40f1abf2a53400a889a2eccc27eaa40\n",
    ),
    Row(
        "letter-runs",
        # Letters typed in runs (`'xxxxyyyy{'`), a template's doubled letters (`xx=yy`).
        r"(?-i:(?:([A-Za-z])\1{3,}){2,}[^\w\s]?|([a-z])\2(?:[=:_-]([a-z])\3)+)",
        ends="          bind_pass: 'xxxxyyyy{'\n",
        keeps="          bind_pass: 'xxxxyyy9{'\n",
    ),
    Row(
        "arn",
        # An Amazon Resource Name names a resource, a managed policy or a key; it grants nothing.
        r"arn:[a-z*-]*:[a-z0-9*-]+:\S*",
        ends='    "IAMUserChangePassword": "arn:aws:iam::aws:policy/IAMUserChangePassword",\n',
        keeps='    "IAMUserChangePassword": "arnXk92jd0qLm7vTb3z",\n',
    ),
    Row(
        "urn-reference",
        # A URN names a thing; a secret is never one (`clientSecret: "urn:k8s:secret:oidc:clientSecret"`).
        r"urn:[a-z0-9][a-z0-9-]{0,31}:\S+",
        ends='      clientSecret: "urn:k8s:secret:my-secret:clientSecret"\n',
        keeps='      clientSecret: "urnXk92jd0qLm7vTb3zQw1e"\n',
    ),
    Row(
        "namespaced-secret-name",
        # A Kubernetes reference to a Secret, `namespace/name`, under a key naming one (nginx-ingress's
        # `auth-tls-secret: "default/ca-secret"`).
        r"(?-i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?/[a-z]+(?:-[a-z0-9]+)*(?:\.[a-z0-9-]+)*)",  # lower case, words
        key=r"secret",
        ends='    nginx.ingress.kubernetes.io/auth-tls-secret: "default/ca-secret"\n',
        keeps='    nginx.ingress.kubernetes.io/auth-tls-secret: "default/Xk92jd0qLm7vTb3z"\n',
    ),
    Row(
        "empty-pem-in-base64",
        # A Kubernetes Secret's base64 of a PEM header and footer with no key between (`LS0tLS1CRUdJTi` is
        # base64 of `-----BEGIN`): a fixture's stand-in; one with a key body is longer and stays a secret.
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,90}={0,2}",
        ends="data:\n  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCi0tLS0tRU5EIFBSSVZBVEUgS0VZLS0tLS0=\n",
        keeps=(
            "data:\n  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVND"
            "Qktjd2dnU2pBZ0VBQW9JQkFRQzdWSlRVdDlVczhjS2oKTXpFZll5amlXQTRSNC9NMmJTMUdCNHQ3TlhwOThDM1NDNmRWTXZE\n"
        ),
    ),
)

_USER_ROWS: list[Row] = []


def add_rows(rows: Iterable[Row]) -> None:
    """Add a config's allowlist rows (`secrets_allowlist`) to those every scan reads."""
    _USER_ROWS.extend(rows)


def set_user_rows(rows: Iterable[Row]) -> None:
    """Read these rows of a config's `secrets_allowlist`, in place of any read before."""
    _USER_ROWS[:] = list(rows)


def user_rows() -> Sequence[Row]:
    return tuple(_USER_ROWS)


def excepted(key: str, value: str, after: str = "") -> str:
    """The id of the first row that excepts this value of this key, with `after` the rest of its line ("" when
    none does)."""
    bare = value.strip("'\"`")
    for row in (*ROWS, *_USER_ROWS):
        if row.matches(key, bare, after):
            return row.id
    return ""
