"""The exceptions of the `key = value` rule as data: one table (`TABLE`), each row a rule id, what it matches (a
regular expression over the whole value, quotes aside, case-insensitive; over the key and the rest of the value's line
when the row names them), why, a false alarm it ends and a secret of the same shape it keeps
(tests/secrets/test_exceptions.py checks both of every row). One small engine reads it; users add rows of their own
with `secrets_allowlist` in the config (docs/secrets.md).

A row of `TABLE`: `# why` lines, then `id [key=REGEX] [after=REGEX]: VALUE-REGEX` (`\x20` for a space inside the
key's or the line's regex), then `  - ` the false alarm it ends and `  + ` the secret it keeps, `⏎` for a line break.
A line indented by four spaces goes on the one before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

__all__ = ["ROWS", "TABLE", "Row", "add_rows", "excepted", "set_user_rows", "user_rows"]


@dataclass(frozen=True, slots=True)
class Row:
    """One exception: values (and keys) it matches, and what it ends and keeps."""

    id: str
    value: str  # a regular expression the whole value matches
    ends: str = ""  # a false alarm it ends (a text with no secret)
    keeps: str = ""  # a secret of the same shape it keeps (a text whose one finding is a secret)
    key: str = ""  # a regular expression the key's name holds (search), "" for any key
    after: str = ""  # a regular expression the rest of the value's line holds (search), "" for any
    why: str = ""
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


TABLE = r"""
# Booleans, nulls, type names, switches and enums a key of a secret takes as a setting (fetch's
# `credentials: 'include'`, ansible's `update_password: always`, a Docker image's `…_EMPTY_PASSWORD: yes`,
# Configure's `d_pwpasswd='define'`, Perl's undef, Kotlin's nullable `String?`).
option-word: (?:null|none|true|false|undefined|nil|n/a|na|empty|yes|no|y|n|always|never|on_create|on_change
    |on_success|string|str|bool|boolean|int|integer|float|number|bytes|dict|list|object|any|unknown|char|secretstr
    |secretbytes|include|omit|same-origin|required|optional|auto|enabled|disabled|on|off|default|define|undef
    |hashed|encrypted)[.?]?
  - services:⏎  db:⏎    environment:⏎      MYSQL_ALLOW_EMPTY_PASSWORD: yes⏎
  + services:⏎  db:⏎    environment:⏎      MYSQL_PASSWORD: yes-Xk92jd0q⏎
# A value that tells the reader to put one in: CHANGE_ME, REPLACE_ME, TODO, FIXME.
placeholder-words: (?:please[_-]?)?(?:change[_-]?(?:me|it|this)|replace[_-]?(?:me|this|with[_-]?\w*)|todo|fixme|tbd)
  - grafana:⏎  adminPassword: CHANGE_ME⏎
  + grafana:⏎  adminPassword: CHANGE_Xk92jd0q⏎
# A value of letters that spells its key's word: a name (`secret: userssecret`, `secret: secretName`).
key-word-label key=secret$: (?=[a-z_-]*secret)[a-z_-]{6,40}
  - spec:⏎  basicAuth:⏎    secret: userssecret⏎
  + spec:⏎  basicAuth:⏎    secret: usersXk92jd0q⏎
# A dependency's version requirement (yarn.lock's `path-key: "npm:^3.1.0"`, pnpm-lock.yaml's `…-key: 7.29.7(@babel/…)`).
version-requirement: (?:npm:)?(?:[\^~]|[<>]=?)?\d{1,4}(?:\.\d{1,6}){1,3}(?:-[\w.]+)?(?:\(.*)?
  -   dependencies:⏎    path-key: "npm:^3.1.0"⏎
  +   dependencies:⏎    path-key: "npm:Xk92jd0qLm7vTb3z"⏎
# A password typed along the keyboard's rows (`asdfqwer1234asdf` of a test's URL).
keyboard-walk: (?:asdf|qwer|zxcv|uiop|hjkl|1234|5678|abcd)+
  - $config = ['password' => 'asdfqwer1234asdf'];⏎
  + $config = ['password' => 'asdfXk92jd0qLm7v'];⏎
# A template literal's or a shell's substitution: the value is built at run time (`` `secret${i}` ``).
template-at-run-time: .*\$\{.*
  - password: `secret${i}`,⏎
  + password: "s3cr3t$i9",⏎
# A template of str.format (`'latest/{0}'.format(system)`).
format-template: .*\{[\w.]{0,40}\}.*
  - params.key = 'latest/{0}'.format(system)⏎
  + params.key = 'latest/Xk92jd0qLm7v'⏎
# An example cut short in the docs (`eyJhbGciOi...`, `…2...BDFH…`).
cut-short: .*(?:\.\.\.|…).*
  - verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...",⏎
  + verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9x",⏎
# A SigV4 credential scope (`Credential=AKIA…/20220524/us-east-1/s3/aws4_request`).
sigv4-scope: .*/aws4_request
  - Credential=mock_access_key/20220524/us-east-1/cognito-idp/aws4_request, SignedHeaders=host⏎
  + Credential=Xk92jd0qLm7v/20220524, SignedHeaders=host⏎
# A regular expression's class right after the key: a pattern that masks a secret (`client_secret=\w+`).
masking-pattern: (?-i:\\[wdsSWD][+*]).*
  - url.replace(/\bclient_secret=\w+/g, "client_secret=[REDACTED]")⏎
  + client_secret=Xk92jd0q+/g⏎
# Only escaped white space: a separator (`credential = "\\n".join(parts)`).
escaped-white-space: (?:\\{1,2}[nrt]|[ \t])+
  - credential = "\n".join(parts)⏎
  + credential = "Xk92jd0q"⏎
# A command line's next option as the value (`(CREDENTIAL : --location=LOCATION …)`).
next-option: --[a-z][\w-]*(?:=.*)?
  - gcloud iam oauth-clients credentials delete (CREDENTIAL : --location=LOCATION --oauth-client=OAUTH)⏎
  + CREDENTIAL : Xk92jd0qLm⏎
# A volume's key file (`rd.luks.key=<uuid>=/keyfile`).
volume-key-file: [0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}=/.*
  - rd.luks.key=b40f1abf-2a53-400a-889a-2eccc27eaa40=/keyfile:LABEL=keydev⏎
  + rd.luks.key=b40f1abf2a53400a889a2eccc27eaa40⏎
# Letters typed in runs (`'xxxxyyyy{'`), a template's doubled letters (`xx=yy`).
letter-runs: (?-i:(?:([A-Za-z])\1{3,}){2,}[^\w\s]?|([a-z])\2(?:[=:_-]([a-z])\3)+)
  -           bind_pass: 'xxxxyyyy{'⏎
  +           bind_pass: 'xxxxyyy9{'⏎
# An Amazon Resource Name names a resource, a managed policy or a key; it grants nothing.
arn: arn:[a-z*-]*:[a-z0-9*-]+:\S*
  -     "IAMUserChangePassword": "arn:aws:iam::aws:policy/IAMUserChangePassword",⏎
  +     "IAMUserChangePassword": "arnXk92jd0qLm7vTb3z",⏎
# A URN names a thing; a secret is never one (`clientSecret: "urn:k8s:secret:oidc:clientSecret"`).
urn-reference: urn:[a-z0-9][a-z0-9-]{0,31}:\S+
  -       clientSecret: "urn:k8s:secret:my-secret:clientSecret"⏎
  +       clientSecret: "urnXk92jd0qLm7vTb3zQw1e"⏎
# A Kubernetes reference to a Secret, `namespace/name`, under a key naming one (nginx-ingress's
# `auth-tls-secret: "default/ca-secret"`).
namespaced-secret-name key=secret: (?-i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?/[a-z]+(?:-[a-z0-9]+)*(?:\.[a-z0-9-]+)*)
  -     nginx.ingress.kubernetes.io/auth-tls-secret: "default/ca-secret"⏎
  +     nginx.ingress.kubernetes.io/auth-tls-secret: "default/Xk92jd0qLm7vTb3z"⏎
# A Kubernetes Secret's base64 of a PEM header and footer with no key between (`LS0tLS1CRUdJTi` is
# base64 of `-----BEGIN`): a fixture's stand-in; one with a key body is longer and stays a secret.
empty-pem-in-base64: LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,90}={0,2}
  - data:⏎  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCi0tLS0tRU5EIFBSSVZBVEUgS0VZLS0tLS0=⏎
  + data:⏎  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVNDQktjd2dnU2pBZ0V
    BQW9JQkFRQzdWSlRVdDlVczhjS2oKTXpFZll5amlXQTRSNC9NMmJTMUdCNHQ3TlhwOThDM1NDNmRWTXZE⏎
# A small number, a date, a time or a version (`42`, `2015-07-29`, `1.0.0`): data, not a credential.
data: \d{1,3}|\d+(?:[-.:/]\d+)+
  - DB_PASSWORD=2015-07-29⏎
  + DB_PASSWORD=2015-07-29x⏎
# A technique of MITRE ATT&CK (`T1552`, `T1098.001`), as a security API's enum documents its members.
attack-technique: (?-i:T\d{4}(?:\.\d{3})?)
  -   "credentials": "T1552",⏎
  +   "credentials": "T1552x9",⏎
# A resource name of Google Cloud (`projects/123/secrets/my-secret/versions/1`): what holds a secret, not its value.
cloud-resource-name: (?-i:(?:projects|organizations|folders|billingAccounts)/[^/\s]+(?:/[a-z][A-Za-z]*/[^/\s]+)*)
  - secret: projects/123/secrets/my-secret/versions/1⏎
  + secret: projectz/123/Xk92jd0q⏎
# An Amazon account's id (the subject of a Login with Amazon token); its client secrets (`amzn1.oa2-cs.v1.…`) stay.
amazon-account-id: amzn1\.account\.\w+
  - client_secret: amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A⏎
  + client_secret: amzn1.oa2-cs.v1.Xk92jd0qLm7vTb3z⏎
# An IPv6 address or interface identifier with `::` (systemd.network's `Token=::1a:2b:3c:4d`, `fe80::1`).
ipv6: (?=.*::)(?:[a-z]+:)?(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?
  - [IPv6AcceptRA]⏎Token=::1a:2b:3c:4d⏎
  + [IPv6AcceptRA]⏎Token=Xk92jd0q:1a:2b:3c:4d⏎
# A public key in base64 DER (SubjectPublicKeyInfo: EC P-256 and P-384, RSA, Ed25519, X25519): it grants nothing.
# A private key's PKCS#8 opens with a version (`MC4CAQAw`).
public-key-der: (?-i:(?:MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE|MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE
    |MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A|MIICIjANBgkqhkiG9w0BAQEFAAOCAg8A|MCowBQYDK2VwAyEA|MCowBQYDK2VuAyEA).*)
  - "key": "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE="⏎
  + "key": "MC4CAQAwBQYDK2VwBCIEIGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE"⏎
# A struct tag's options (Go's protobuf `protobuf_key:"bytes,1,opt,name=key,proto3"`): a field's encoding.
option-list: (?-i:[a-z]+(?:,(?:[a-z][a-z0-9]*|\d+))*,[a-z]+=[a-z0-9_.-]+
    (?:,(?:[a-z][a-z0-9]*|\d+|[a-z]+=[a-z0-9_.-]+))*)
  - 	Labels map[string]string `protobuf_key:"bytes,1,opt,name=key,proto3"`⏎
  + 	Labels map[string]string `protobuf_key:"Xk92jd0qLm7vTb3z"`⏎
# RFC 7617's example password (`Aladdin:open sesame`), in any spacing (`Basic YWxhZGRpbjpvcGVuc2VzYW1l`).
rfc-example-password: open[\x20_-]?sesame
  -     headers:⏎      "authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"⏎
  +     headers:⏎      "authorization": "Basic YWxhZGRpbjpYazkyamQwcUxtN3Y="⏎
# Published sample keys of vendors' docs and RFCs: Stripe's, jwt.io's and PyJWT's tokens, RFC 5849's and RFC 6749's
# credentials, Telegram's bot token, Google's P12 password and its authenticator example, RFC 7617's Aladdin.
documented-sample: (?-i:A3ddj3w|gX1fBat3bV|notasecret|open sesame|mF_9\.B5f\-4\.1JqM|0685bd9184jfhq22
    |9djdj82h48djs9d2|JBSWY3DPEHPK3PXP|ad180jjd733klru7|dpf43f3p2l4k3l03|hdhd0244k9j7ao03|hfdp7dh39dks9884
    |hh5s93j4hdidpola|jbswy3dpehpk3pxp|kd94hf93k423kf44|kkk9d7dh3k39sjv7|nnch734d00sl2jdk|pfkkdhi9sl3r4s00
    |45ghiukldjahdnhzdauz|2YotnFZFEjr1zCsicMWpAA|7Fjfp0ZBr1KtDRbnfVdmIw|SplxlOBeZQQYbYS6WxSbIA
    |tGzv3JOkF0XG5Qx2TlKWIA|QWxhZGRpbjpvcGVuIHNlc2FtZQ==|czZCaGRSa3F0MzpnWDFmQmF0M2JW
    |pk_test_TYooMQauvdEDq54NiTphI7jx|sk_test_4eC39HqLyjWDarjtT1zdp7dc|sk_test_BQokikJOvBiI2HlWgH4olfQ2
    |123456:ABC\-DEF1234ghIkl\-zyx57W2v1u123ew11
    |eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\.eyJzb21lIjoicGF5bG9hZCJ9\.4twFt5NiznN84AWoo1d7KO1T_yoc0Z6XOpOVswacPZg
    |eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ
    \.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c)
  - STRIPE_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc⏎
  + STRIPE_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dX⏎
# Keys whose name ends with a secret's word but hold none: a page's or a request's token, a public, primary or sort
# key, a key's id or fingerprint, RFC 6455's nonce, an S3 object's name (`"S3objectKey": "ami-….bin"`).
harmless-key key=(?:page|next|sync|change|lock|update|input|output)[_-]?token|continuation|csrf|public[_-]?key
    |primary[_-]key|foreign[_-]key|sort[_-]key|partition[_-]key|key[_-]id|idempotency|fingerprint|gpg[_-]key
    |pgp[_-]key|websocket[_-]key|client[_-]?request[_-]?token|lifecycle[_-]?action[_-]?token|result[_-]key
    |limit[_-]key|object[_-]?key: .*
  - {"nextPageToken": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA"}⏎
  + {"accessToken": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA"}⏎
"""

_HEAD = re.compile(r"([\w-]+)((?: (?:key|after)=\S+)*): (.*)")


def _read(table: str) -> tuple[Row, ...]:
    """The rows of a table written as `TABLE` is."""
    lines: list[str] = []
    for line in table.strip().splitlines():
        if line.startswith("    "):
            lines[-1] += line[4:]
        else:
            lines.append(line)
    rows: list[Row] = []
    why: list[str] = []
    for line in lines:
        if line.startswith("#"):
            why.append(line[2:])
        elif line.startswith(("  - ", "  + ")):
            example = line[4:].replace("⏎", "\n")
            rows[-1] = replace(rows[-1], ends=example) if line[2] == "-" else replace(rows[-1], keeps=example)
        else:
            head = _HEAD.fullmatch(line)
            assert head is not None, line
            named = dict(part.split("=", 1) for part in head.group(2).split())
            rows.append(Row(head.group(1), head.group(3), why=" ".join(why), **named))
            why = []
    return tuple(rows)


ROWS = _read(TABLE)
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
