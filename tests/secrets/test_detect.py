"""Detection over the corpus: every secret caught with its kind, every look-alike left alone."""

from __future__ import annotations

import base64
import gc
import itertools
import weakref

import pytest

from offprompt.secrets import find_secrets, may_hold_secret
from tests.secrets.corpus import LOOKALIKES, SECRETS, Case
from tests.secrets.figures import describe, held_out, tuned
from tests.support import REPO


def test_the_corpus_is_as_large_as_promised() -> None:
    kinds = {kind for case in SECRETS for kind, _ in case.secrets}
    assert len(SECRETS) >= 20
    assert len(kinds) >= 20
    assert len(LOOKALIKES) >= 20


@pytest.mark.parametrize("case", SECRETS, ids=lambda case: case.name)
def test_each_secret_is_found_with_its_kind(case: Case) -> None:
    found = {(finding.kind, finding.value) for finding in find_secrets(case.text)}
    assert found == set(case.secrets)


@pytest.mark.parametrize("case", LOOKALIKES, ids=lambda case: case.name)
def test_look_alikes_are_not_secrets(case: Case) -> None:
    assert find_secrets(case.text) == []


def test_findings_are_spans_of_the_text() -> None:
    text = "\n".join(case.text for case in SECRETS)
    findings = find_secrets(text)
    assert [text[f.start : f.end] for f in findings] == [f.value for f in findings]
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))


def test_a_result_with_no_candidate_is_ruled_out_by_the_prefilter() -> None:
    tiny = b'{"content":[{"type":"text","text":"2026-11-30T12:00:00+00:00"}],"isError":false}'
    assert not may_hold_secret(tiny)
    assert not may_hold_secret(tiny * 200)  # the long-text branch
    assert may_hold_secret(b'{"text":"GITHUB_TOKEN=ghp_..."}')
    assert may_hold_secret(("x" * 5000 + "-----BEGIN RSA PRIVATE KEY-----").encode())


def test_a_secret_in_a_key_value_is_named_by_its_format_not_its_key() -> None:
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    assert [(f.kind, f.value) for f in find_secrets(f'password: "{token}"')] == [("github-token", token)]
    assert [(f.kind, f.value) for f in find_secrets(f"https://x:{token}@github.com/a/b")] == [("github-token", token)]


def test_handles_are_not_taken_for_secrets() -> None:
    assert find_secrets("secret: ⟦secret:k7f3q2ab9x aws-secret-key⟧ and password=⟦secret:aaaabbbbcc password⟧") == []


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN RSA PRIVATE KEY-----" + "A" * 200_000,  # no END line
        "eyJ" + "a" * 100_000 + ".eyJ" + "b" * 100_000,  # a JWT that never ends
        "password=" * 50_000,
        "://" + ":" * 100_000 + "@",
        'key: "' + "\\" * 100_000,
    ],
    ids=["pem-without-end", "endless-jwt", "repeated-keys", "colons", "backslashes"],
)
def test_hostile_inputs_finish(text: str) -> None:
    """Every pattern is bounded: these would take minutes with an unbounded or nested quantifier."""
    find_secrets(text)


def test_the_docs_state_the_measured_figures() -> None:
    """docs/secrets.md's detection figures are what `python -m tests.secrets.figures` measures, on both corpora."""
    page = " ".join((REPO / "docs" / "secrets.md").read_text().split())
    assert describe(tuned()) in page
    assert describe(held_out()) in page


#: Ordinary code the detector used to rewrite (read through fs__read_text_file, a coding agent then wrote the
#: handles back into the file): a name, an attribute, a call, the key's own name, a documentation example.
CODE_THAT_HOLDS_NO_SECRET = [
    "def login(credentials):\n    client.auth(credentials=credentials)\n",
    "def connect(password):\n    return Db(password=password)\n",
    "pw_input = input()\nconnect(password=pw_input)\n",
    "secret_key = settings.SECRET_KEY\n",
    "_CLIENT_SECRET = 'CLIENT_SECRET'\n",
    "token = os.environ['GITHUB_TOKEN']\n",
    "api_key = config.get('api_key')\n",
    "password = getpass.getpass('Password: ')\n",
    "self.password = config['password']\n",
    "key=itemgetter(1)\n",
    "RC2_KEY = rc2_key_st\nclass rc2_key_st(Structure): pass\n",
    "[server1]\nusername:me\npassword:secret\n",
    "const options = new URL('http://abc:pass@example.com');\n",
    "const token = await getToken(user);\n",
]


@pytest.mark.parametrize("code", CODE_THAT_HOLDS_NO_SECRET)
def test_code_that_names_a_secret_holds_none(code: str) -> None:
    assert find_secrets(code) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("DB_PASSWORD=s3cretpass\n", "s3cretpass"),  # a bare word of a .env line still is one
        ('password = "Tr0ub4dor&3"\n', "Tr0ub4dor&3"),  # a quoted string in code is a value
        ("export API_TOKEN=q8Zr2LmX7vTb\n", "q8Zr2LmX7vTb"),
        ('password = "MyPassword!42"\n', "MyPassword!42"),  # a word of the key inside a real value
        ("PASSWORD=Password2024\n", "Password2024"),
        ("SECRET=g7(Kp!2xQz9\n", "g7(Kp!2xQz9"),  # punctuation, not a call
        ("TOKEN=Zq7.Lm3.Xp9\n", "Zq7.Lm3.Xp9"),  # dots, not an attribute
        ("DB_PASSWORD=admin\n", "admin"),  # weak, and real
    ],
)
def test_a_config_lines_value_is_still_a_secret(text: str, value: str) -> None:
    assert [finding.value for finding in find_secrets(text)] == [value]


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=Tr0ub4dorX9\nREDIS_PASSWORD=Tr0ub4dorX9\n",  # one password given twice is a value both times
        "DB_PASSWORD=Tr0ub4dorX9\nDATABASE_URL=postgres://app:Tr0ub4dorX9@db/shop\n",
    ],
)
def test_a_value_given_twice_is_a_secret_in_both_places(text: str) -> None:
    assert [finding.value for finding in find_secrets(text)] == ["Tr0ub4dorX9", "Tr0ub4dorX9"]


def test_every_kind_a_finding_may_name_is_one_secrets_allow_accepts() -> None:
    from offprompt.secret_kinds import SECRET_KINDS
    from offprompt.secrets.detect import DETECTOR_KINDS

    assert DETECTOR_KINDS <= SECRET_KINDS
    named = {kind for case in SECRETS for kind, _ in case.secrets}
    assert named <= SECRET_KINDS


def _basic(user_password: str) -> str:
    return base64.b64encode(user_password.encode()).decode()


FINGERPRINT = "e0d96d6fad35a61a0577f467940509b5aa08b6dea8d99456ec19a6e47126bc52"  # gcloud's help of OS Login keys


#: Each rule of the second, third and fourth rounds (#24, fitted on bench.secrets_precision's tuned parts): a false
#: alarm it ends, and a secret of the same shape it still finds (with the value found).
RULES: dict[str, tuple[str, str, str]] = {
    "`::` is no assignment": (".lh-range--pass::before {\n", "lh-range--pass: Xk92jd0Lm\n", "Xk92jd0Lm"),
    "a type annotation": ("    password: bool\n", "    password: b0olXq\n", "b0olXq"),
    "an option word": ("fetch(url, {credentials: 'include'})\n", "{credentials: 'inc1ude-Xq'}\n", "inc1ude-Xq"),
    "backticks around a value": (
        "Pass `add_to_git_credential=True` in this function\n",
        "Pass `git_credential=Tru3x9Q` in this function\n",
        "Tru3x9Q`",
    ),
    "a key named in prose": (
        "Release GPG key: 9554F04D7259F04124DE6B476D5A82AC7E37093B\n",
        "Release API key: 9554F04D7259F04124DE6B476D5A82AC7E37093B\n",
        "9554F04D7259F04124DE6B476D5A82AC7E37093B",
    ),
    "a WebSocket nonce": (
        '"Sec-WebSocket-Key": "k9kFAUWNAMmf5OEMfTlOEA=="\n',
        '"X-Api-Key": "k9kFAUWNAMmf5OEMfTlOEA=="\n',
        "k9kFAUWNAMmf5OEMfTlOEA==",
    ),
    "a label of secret words": (
        "user: { password: 'secret-2-levels' }\n",
        "user: { password: 'secret2024' }\n",
        "secret2024",
    ),
    "a label glued": ('KEY_PASSWORD = "somepass"\n', 'KEY_PASSWORD = "somepass9x"\n', "somepass9x"),
    "a label with a counter": (
        'headers={"X-Chroma-Token": "test-api-key-123"}\n',
        'headers={"X-Chroma-Token": "test-api-Xk92jd0q"}\n',
        "test-api-Xk92jd0q",
    ),
    "a label of the key's words": (
        'MINIO_SECRET_KEY = "minio123"\n',
        'MINIO_SECRET_KEY = "minio2024x"\n',
        "minio2024x",
    ),
    "a sentence about a secret": (
        "const password = 'Password used to generate key';\n",
        "const password = 'correct horse battery staple';\n",
        "correct horse battery staple",
    ),
    "the next word of a sentence": (
        'raise TypeError("pwd: expected bytes, got %s")\n',
        "login failed, password: Xk92jd0 from 10.0.0.1\n",
        "Xk92jd0",
    ),
    "a class name holding the key's word": (
        '"secret": "V1SecretVolumeSource",\n',
        '"secret": "MySecretSauce2024",\n',
        "MySecretSauce2024",
    ),
    "the key's own name across separators": (
        'OtpCredentials: "otp-credentials",\n',
        'OtpCredentials: "otp-cred-Xk92",\n',
        "otp-cred-Xk92",
    ),
    "a sibling name of the key": (
        'x?"lh-icon--checklist-pass":"lh-icon--checklist-fail"\n',
        "db-main-password: db-main-Xk92jd0\n",
        "db-main-Xk92jd0",
    ),
    "a small number, a date": ("const ctx = vm.createContext({ secret: 42 });\n", "PIN_PASSWORD=4711\n", "4711"),
    "a date": ('"input-password": "2015-07-29",\n', '"input-password": "2015-07-29x",\n', "2015-07-29x"),
    "a run of the alphabet": ("const secret = 'abcdefg';\n", "const secret = 'abcdeg';\n", "abcdeg"),
    "escapes of letters beyond ASCII": (
        '<tag key="\\xe5\\xf6\\xf6&lt;&gt;" />\n',
        'api_key = "Zk8%2Bq9Lm3%3DxR7vT2"\n',
        "Zk8%2Bq9Lm3%3DxR7vT2",
    ),
    "a template literal": ("password: `secret${i}`,\n", 'password: "s3cr3t$i9",\n', "s3cr3t$i9"),
    "an elided example": (
        'verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...",\n',
        'verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9x",\n',
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9x",
    ),
    "a doctest's answer": (
        ">>> session.fetch_request_token(url)\n{\n    'oauth_token': 'kjerht2309u',\n}\n",
        "{\n    'oauth_token': 'kjerht2309u',\n}\n",
        "kjerht2309u",
    ),
    "a structured name after a generic key": (
        '{ key: "SPEED_SLOW_4G" }\n',
        '{ key: "q8Zr2LmX7vTb" }\n',
        "q8Zr2LmX7vTb",
    ),
    "a structured name, not a prefixed token": (
        "key='param:secp384r1.pem'\n",
        "api_key: sk_9f8a7b6c5d4e3f2a1b0c\n",
        "sk_9f8a7b6c5d4e3f2a1b0c",
    ),
    "a code word and then code": ("this.#t.password = this.#c();\n", "password = 'this.#c()'\n", "this.#c()"),
    "an attribute path and then code": (
        "o.message=r===t?i.pass:i.fail:(x)\n",
        "DB_PASS=Ab9.Xq7:(z\n",
        "Ab9.Xq7:(z",
    ),
    "an attribute of a name of the text": (
        "const UIStrings$18 = {};\nconst c = { i18nTitleKey: UIStrings$18.fast4G };\n",
        "i18nTitleKey: Zq7.fast4G\n",  # in code an attribute is never a value: a config's line keeps it
        "Zq7.fast4G",
    ),
    "a URL of a documentation domain": (
        "new URL('https://abc:xyz@example.com');\n",
        "new URL('https://abc:Xk92jd0q@db.acme.dev');\n",
        "Xk92jd0q",
    ),
    "a URL whose user is of a documentation domain": (
        "proxy = 'http://john%40example.com:P%40SSWORD@localhost:3128/'\n",
        "proxy = 'http://john%40acme.dev:P%40SSWORD@localhost:3128/'\n",
        "P%40SSWORD",
    ),
    "a URL's example password, decoded": (
        'httpx.URL("https://jo%40email.com:a%20secret@m\u00fcller.de:1234/")\n',
        'httpx.URL("https://jo%40email.com:a%20s3cr3t%21@m\u00fcller.de:1234/")\n',
        "a%20s3cr3t%21",
    ),
    "the password of a list of hosts": (
        "MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')\n",
        "MultiHostUrl('https://foo.com:123,foo:Xk92jd0q@bar.com/path')\n",
        "123,foo:Xk92jd0q",
    ),
    "Basic credentials with an example password": (
        f"Authorization: Basic {_basic('me:pass')}\n",
        f"Authorization: Basic {_basic('me:Xk92jd0q')}\n",
        _basic("me:Xk92jd0q"),
    ),
    "a scheme's value after a key": (
        f'TEST_BASIC_TOKEN = "Basic {_basic("me:pass")}"\n',
        f'TEST_BASIC_TOKEN = "Basic {_basic("me:Xk92jd0q")}"\n',
        _basic("me:Xk92jd0q"),
    ),
    "a PEM header with no key": (
        'if (pkcs8.indexOf("-----BEGIN PRIVATE KEY-----") !== 0)\n',
        "-----BEGIN PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 2 + "\n",
        "-----BEGIN PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 2 + "\n",
    ),
    # The third round (fitted on the tuned parts, tuned-4 and held-out-2 among them)
    "`==` and `===` are no assignment": (
        "if(o.password===s.password)return\n",
        "o.password=Xk92jd0qLm\n",
        "Xk92jd0qLm",
    ),
    "a comparison after an attribute path": (
        "t.credentials=e.crossOrigin===`anonymous`?`omit`:`same-origin`\n",
        "DB_PASS=Ab9.Xq7=z\n",
        "Ab9.Xq7=z",
    ),
    "a published sample of an RFC": (
        '"access_token":"2YotnFZFEjr1zCsicMWpAA",\n',
        '"access_token":"2YotnFZFEjr1zCsicMWpAB",\n',
        "2YotnFZFEjr1zCsicMWpAB",
    ),
    "Telegram's sample bot token": (
        'botToken: "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",\n',
        'botToken: "654321:Xk9-Lm7q2Zr8vTb3zQw1e9Ab4cD5eF6",\n',
        "654321:Xk9-Lm7q2Zr8vTb3zQw1e9Ab4cD5eF6",
    ),
    "a name ending with what it stands for": (
        "clientSecret: 'my-idp-secret',\n",
        "clientSecret: 'my-Xk92jd0q-secret',\n",
        "my-Xk92jd0q-secret",
    ),
    "a key's name as the value": (
        "SECRET_KEY = 'AWS_SECRET_ACCESS_KEY'\n",
        "SECRET_KEY = 'AWS_SECRET_ACCESS_9f8Xq2'\n",
        "AWS_SECRET_ACCESS_9f8Xq2",
    ),
    "a label of placeholder words": (
        '"AWS_SECRET_KEY": "FOOBARSECRET",\n',
        '"AWS_SECRET_KEY": "FOOBARSECRET9x",\n',
        "FOOBARSECRET9x",
    ),
    "a template literal's content": (
        "{clientId:n,clientSecret:`test-client-secret`}\n",
        "{clientId:n,clientSecret:`Xk92jd0qLm`}\n",
        "`Xk92jd0qLm`",
    ),
    "a short phrase of no content": (
        "redact({secret: 'as will this'})\n",
        "{secret: 'purple monkey dishwasher'}\n",
        "purple monkey dishwasher",
    ),
    "a key and a name in one string": ('    "passwd:gecos",\n', "passwd:gecos9Xq\n", "gecos9Xq"),
    "a URL template's parts": (
        "- 'github://org:repo@sha/precip/catalog.yml'\n",
        "- 'github://org:repo9Xq@sha/precip/catalog.yml'\n",
        "repo9Xq",
    ),
    "a quoted `::` path is a type's name": (
        '"AWS::IAM::AccessKey": "62d91b17309e76c8",\n',
        'Config::kApiKey = "62d91b17309e76c8";\n',
        "62d91b17309e76c8",
    ),
    "a field of an ARN": (
        '"Resource":"arn:aws:secretsmanager:*:*:secret:rds-custom!*"\n',
        '"Resource":"vault:secret:Xk92jd0q!x"\n',
        "Xk92jd0q!x",
    ),
    "an ARN as the value": (
        '"encryptionKey": "arn:aws:kms:us-west-2:111122223333:key/c9fe2447-0795",\n',
        '"encryptionKey": "arn:Xk92jd0qLm7vTb3zQw1e",\n',
        "arn:Xk92jd0qLm7vTb3zQw1e",
    ),
    "a concurrency or idempotency token of AWS": (
        '"ChangeToken": "abcd12f2-46da-4fdb-b8d5-fbd4c466928f",\n',
        '"SessionToken": "abcd12f2-46da-4fdb-b8d5-fbd4c466928f",\n',
        "abcd12f2-46da-4fdb-b8d5-fbd4c466928f",
    ),
    "a paginator's field names": (
        '"result_key": "ServerlessV2PlatformVersions"\n',
        '"api_key": "Xk92jd0qLm7vTb3z"\n',
        "Xk92jd0qLm7vTb3z",
    ),
    "a camel-case name after a generic key": ("dest_key='Ec2KeyName',\n", "dest_key='Xk92jd0qLm7v',\n", "Xk92jd0qLm7v"),
    "a dotted name of camel-case words": (
        "EMRFS_SSE_KEY = 'fs.s3.enableServerSideEncryption'\n",
        "EMRFS_SSE_KEY = 'fs.s3.Xk92jd0qLm7vTb3z'\n",
        "fs.s3.Xk92jd0qLm7vTb3z",
    ),
    "a docstring's reST field": (
        ":param password: When `True`, display using asterisks.\n",
        "password: Xk92jd0qLm\n",
        "Xk92jd0qLm",
    ),
    "a template of str.format": (
        "params.key = 'latest/{0}'.format(system)\n",
        "params.key = 'latest/Xk92jd0qLm7v'\n",
        "latest/Xk92jd0qLm7v",
    ),
    "a mock's stub after an AWS secret key's name": (
        'aws_secret_access_key="sk",\n',
        "aws_secret_access_key=wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEZ\n".replace("EXAMPLE", "Q8x2Lm7"),
        "wJalrXUtnFEMIK7MDENGbPxRfiCYzQ8x2Lm7KEZ",
    ),
    "a negation or a ternary on a name of the text": (
        "var r=f();x={hasBodyClientSecret:!!r}\n",
        "hasBodyClientSecret: !!Xk92jd0q\n",
        "!!Xk92jd0q",
    ),
    "a pattern that masks a secret": (
        'url.replace(/\\bclient_secret=\\w+/g, "client_secret=[REDACTED]")\n',
        "client_secret=Xk92jd0q+/g\n",
        "Xk92jd0q+/g",
    ),
    "a walk through the alphabet": (
        '"passphrase": "AB1C2defGHijkLMNo3PqQRstUvwxyzaCBDEfghh4ijklMN5opqrStuVWxyzAbCDEfghIJ"\n',
        '"passphrase": "Xk92jd0qLm7vTb3zQw1eR5tY8uI0oP2aS4dF6gH8jK1lZ3xC5vB7nM9qW2eR4t"\n',
        "Xk92jd0qLm7vTb3zQw1eR5tY8uI0oP2aS4dF6gH8jK1lZ3xC5vB7nM9qW2eR4t",
    ),
    "a run of the digits round": (
        '"ClientSecret": "123456789012345678901234567890",\n',
        '"ClientSecret": "123456789012345678901234567809",\n',
        "123456789012345678901234567809",
    ),
    "a public key in base64 DER": (
        'key: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE1Olb3zMAFFxXKHiIkQO5cJ3Yhl5i6UPp+IhuteBJbuHcA5Ug"\n',
        'key: "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1Olb3zMAFFxXKHiIkQO5cJ3Yhl5i6UPp"\n',
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1Olb3zMAFFxXKHiIkQO5cJ3Yhl5i6UPp",
    ),
    "an example cut in the middle": (
        '"token": "ACEGmnoq#1rstu2...BDFH3vxwy!4hlm!#5",\n',
        '"token": "ACEGmnoq#1rstu2.BDFH3vxwy!4hlm!#5",\n',
        "ACEGmnoq#1rstu2.BDFH3vxwy!4hlm!#5",
    ),
    "a SigV4 credential scope": (
        "Credential=mock_access_key/20220524/us-east-1/cognito-idp/aws4_request, SignedHeaders=host\n",
        "Credential=Xk92jd0qLm7v/20220524, SignedHeaders=host\n",
        "Xk92jd0qLm7v/20220524",
    ),
    "an AWS example id": (
        "?key=cloudformation/7870825a-xmpl-4def-92e7-c4f8dd360cca\n",
        "?key=cloudformation/7870825a-a1b2-4def-92e7-c4f8dd360cca\n",
        "cloudformation/7870825a-a1b2-4def-92e7-c4f8dd360cca",
    ),
    "a sentence glued in camel case": (
        '"LocalConsolePassword": "PassWordMustBeAtLeast6Chars."\n',
        '"LocalConsolePassword": "SomeKindOfPassword123!@#"\n',
        "SomeKindOfPassword123!@#",
    ),
    "a label of an object's key": ('"Key": "objectkey1"\n', '"Key": "objectkey1Xq9z"\n', "objectkey1Xq9z"),
    "a private key elided or marked as an example": (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "...\n"
        "-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "\n"
        "-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "\n"
        "-----END RSA PRIVATE KEY-----",
    ),
    # The fourth round (fitted on the tuned parts, tuned-5 and held-out-3 among them)
    "a field's description in a docstring": (
        "  Fields:\n    password: Required. Input only. The password for the user.\n",
        "  Fields:\n    password: Xk92jd0q. Input only. The password for the user.\n",
        "Xk92jd0q.",
    ),
    "a word of no value ending a sentence": (
        "Set CLOUDSDK_USE_DEFAULT_CREDENTIALS=true.\n",
        "Set CLOUDSDK_DEFAULT_CREDENTIALS=Xk92jd0q.\n",
        "Xk92jd0q.",
    ),
    "a technique of MITRE ATT&CK": (
        "      UNSECURED_CREDENTIALS: T1552\n      ADDITIONAL_CLOUD_CREDENTIALS: T1098.001\n",
        "      UNSECURED_CREDENTIALS: T1552x9Qz\n",
        "T1552x9Qz",
    ),
    "a call with unpacked arguments": (
        "credential = OnBehalfOfCredential(**obo_kwargs)\n",
        "credential = Ab9(**Xq7!z)\n",
        "Ab9(**Xq7!z",
    ),
    "a vendor's prefix and a counter": (
        'client_secret="sk_test_456",\n',
        'client_secret="sk_test_4x9Qz",\n',
        "sk_test_4x9Qz",
    ),
    "a phrase glued in any case": (
        'client_secret = "abc_ThIsIsAsEcReT"\nmodel = Model(password="IAmSensitive")\n',
        'client_secret = "abc_ThIsIsAsEcReTx9"\n',
        "abc_ThIsIsAsEcReTx9",
    ),
    "a resource name of Google Cloud": (
        "--sasl-password='projects/123/secrets/my-secret/versions/1'\n",
        "--sasl-password='projects123/Xk92jd0q'\n",
        "projects123/Xk92jd0q",
    ),
    "a value the text calls a fingerprint": (
        f"the key with a fingerprint of\n  '{FINGERPRINT}', run:\n\n  $ {{command}} --key='{FINGERPRINT}'\n",
        f"the key of the service, run:\n\n  $ {{command}} --key='{FINGERPRINT}'\n",
        FINGERPRINT,
    ),
    "a URL's password that repeats its user": (
        'pino-mq -u "amqp://guest:guest@localhost/"\n',
        'pino-mq -u "amqp://guest:gu3st9x@localhost/"\n',
        "gu3st9x",
    ),
    "a user and password that repeat each other": (
        'chroma_client_auth_credentials="admin:admin1",\n',
        'chroma_client_auth_credentials="admin:adm1nXq",\n',
        "admin:adm1nXq",
    ),
    "Basic credentials that repeat the user": (
        f"Authorization: Basic {_basic('guest:guest')}\n",
        f"Authorization: Basic {_basic('guest:Xk92jd0q')}\n",
        _basic("guest:Xk92jd0q"),
    ),
    "AWS's request ids in JSON": (
        '"ClientToken": "4752b573-40a6-4eac-a8a4-a72058761219",\n'
        '"RequestToken": "e48f26ff-d0f9-4ab8-a878-120db1edf111"\n',
        'ClientToken: "4752b573-40a6-4eac-a8a4-a72058761219",\n',
        "4752b573-40a6-4eac-a8a4-a72058761219",
    ),
    "an object's key is its name": (
        '"S3objectKey": "ami-1234567890abcdef0.bin",\n',
        '"S3AccessKey": "ami-1234567890abcdef0.bin",\n',
        "ami-1234567890abcdef0.bin",
    ),
    "a UUID after a bare key": (
        '"key":"48c67f3c-63bb-4f92-a98a-4ee0fbc2bef6",\n"key": "signed-2065c468-73e2-4385-a6c9-0123456789abc"\n',
        '"api_key":"48c67f3c-63bb-4f92-a98a-4ee0fbc2bef6",\n',
        "48c67f3c-63bb-4f92-a98a-4ee0fbc2bef6",
    ),
    "a condition key of IAM": (
        '{"key": "ec2:InstanceID", "values": {}}\n',
        '{"key": "ec2:InstXq9ID", "values": {}}\n',
        "ec2:InstXq9ID",
    ),
    "a field of a mistyped ARN": (
        '"aarn:aws:secretsmanager:us-west-2:123456789123:secret:secretName-1234f",\n',
        '"yarn:secret:Xk92jd0q!x",\n',
        "Xk92jd0q!x",
    ),
    "an Amazon account's id": (
        '"SubjectFromWebIdentityToken": "amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A",\n',
        '"ClientSecret": "amzn1.oa2-cs.v1.3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",\n',
        "amzn1.oa2-cs.v1.3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    ),
    "a label of how a value was made": (
        '"Password": "webdavgeneratedpassword1",\n"Password": "webdavregeneratedpassword2",\n',
        '"Password": "webdavgeneratedpassword1x9Q",\n',
        "webdavgeneratedpassword1x9Q",
    ),
    "a phrase of no content joined by dashes": (
        'NOPASSWORD = "no-password-required"\n',
        'NOPASSWORD = "no-password-Xk92"\n',
        "no-password-Xk92",
    ),
    "ten words or more are prose": (
        '"UseCallerCredentials": "Set to `true` to use IAM with this data source.  \\n*Type*: Boolean",\n',
        '"UseCallerCredentials": "correct horse battery staple",\n',
        "correct horse battery staple",
    ),
    "a label typed with its newline": (
        "events={'(?i)password':'secret\\\\n'}\n",
        "events={'(?i)password':'s3cr3tX9\\\\n'}\n",
        "s3cr3tX9\\\\n",
    ),
    "a phrase in base64": (
        "  password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ=',\n",
        f"  password: '{base64.b64encode(b'Xk92jd0q:Lm7vTb3z').decode()}',\n",
        base64.b64encode(b"Xk92jd0q:Lm7vTb3z").decode(),
    ),
    # the fifth round's (tuned-6 and held-out-4)
    "a description whose first word is a compound": (
        "    ap_password:       Multiple-system operator account password\n",
        "    ap_password:       Xk92-system operator account password\n",
        "Xk92-system",
    ),
    "a description whose first word is a possessive": (
        "    password: Account's password.\n",
        "    password: Xk92jd0's password.\n",
        "Xk92jd0",
    ),
    "a sample account's password in a URL": (
        'create_engine("mysql+mysqldb://scott:tiger@localhost/test")\n',
        'create_engine("mysql+mysqldb://app:tiger@localhost/test")\n',
        "tiger",
    ),
    "a sample account's password after its user": (
        "DSN=some_dsn;UID=scott;PWD=tiger\n",
        "DSN=some_dsn;UID=app;PWD=tiger\n",
        "tiger",
    ),
    "Google's P12 password": (
        'private_key_password = "notasecret"\n',
        'private_key_password = "notasecret9"\n',
        "notasecret9",
    ),
    "a field under a docstring's Args:": (
        "    Args:\n      credentials: Unused.\n",
        "    args:\n      credentials: Unused9x\n",
        "Unused9x",
    ),
    "a code of an enumeration": (
        "ER_NOT_VALID_PASSWORD = 1819\nER_MUST_CHANGE_PASSWORD = 1820\n",
        "DB_PORT = 5432\nDB_PASSWORD = 1820\n",
        "1820",
    ),
    # the sixth round's (tuned-7 and held-out-5)
    "an epytext field": (
        "    @type password: L{bytes}\n",
        # prose, not code: its value stays one
        "The server asks for:\n    type password: L{bytes}\nas it was given,\n"
        "waits for the answer\nand closes the session.\n",
        "L{bytes",
    ),
    "a string a ternary yields": (
        'input_el.type = is_visible ? "password" : "text"\n',
        'input_el = {"password" : "t3xtXq9"}\n',
        "t3xtXq9",
    ),
    "minified code's boolean": ("this.pass=!1,this.options=s||{}\n", "this.pass=!1x9Q,this.options=s\n", "!1x9Q"),
    "an operator after an attribute": (
        "i.ctrlKey=r.ctrlKey||!1,i.altKey=r.altKey||!1\n",
        "i.ctrlKey=r9.k3y||Xq2\n",
        "r9.k3y||Xq2",
    ),
    "a default given to a name": (
        "var _t=0;_i.equalsGreaterThanToken=_t??xe(39)\n",
        "_i.equalsGreaterThanToken=_u??xe(39)\n",  # with no statement of code around it, a value
        "_u??xe(39",
    ),
    "code between two string literals": (
        'r.warn("bad argument to arrayDefaultKey: "+t),t.slice(0,-1)+"defaults"\n',
        '{"arrayDefaultKey": "+t9Xq2Lm7vTb3zQw(", "x": 1}\n',
        "+t9Xq2Lm7vTb3zQw(",
    ),
    "the next item of a list of literals": (
        'self.challenges = [b"Password:", b"Username:"]\n',
        'self.challenges = [b"Password:",b"Username:"]\n',
        ",b",
    ),
    "a power in a call": ("        key = randrange(2**64)\n", "        key = randrange(2*!64)\n", "randrange(2*!64"),
    "anonymous FTP's e-mail password": (
        'def __init__(self, username="anonymous", password="twisted@twistedmatrix.com"):\n',
        'def __init__(self, username="alice", password="twisted@twistedmatrix.com"):\n',
        "twisted@twistedmatrix.com",
    ),
    "letters typed in runs": ("          bind_pass: 'xxxxyyyy{'\n", "          bind_pass: 'xxxxyyy9{'\n", "xxxxyyy9{"),
    "an attribute list": (
        "if '#EXT-X-KEY:METHOD=AES-128' in s:\n",
        "#EXT-X-KEY:method=AES-128\n",  # a playlist's line (in code a bare value inside a string is no literal)
        "method=AES-128",
    ),
    "arithmetic on an attribute": (
        "var s=n(1);e.altKey&&(o.key=s.C0.ESC+o.key),o.key=s.C0.ESC+t\n",
        "o.key=s9.C0.ESC+Xq2Lm7\n",
        "s9.C0.ESC+Xq2Lm7",
    ),
    "a number times an index": (
        "t.styleKey=2097152*D[0]+D[1];var R=t.style\n",
        "t.styleKey=2097152*D9Xq2Lm7\n",
        "2097152*D9Xq2Lm7",
    ),
    "a CSS rule's pseudo-element": (
        '.fa-user-secret:before{content:"\\f21b"}\n',
        "user-secret:bef0re{Xq2Lm7\n",
        "bef0re{Xq2Lm7",
    ),
    "a widget named for its key": (
        'string:{text:"TextWidget",password:"PasswordWidget",email:"EmailWidget"}\n',
        'string:{text:"TextWidget",password:"PasswordWidget9",email:"EmailWidget"}\n',
        "PasswordWidget9",
    ),
    "a scoped package's name": (
        '{shareScope:"default",shareKey:"@rjsf/validator-ajv8",import:"@rjsf/validator-ajv8"}\n',
        '{shareScope:"default",shareKey:"@Xk92jd0qLm7vTb3z",import:"x"}\n',
        "@Xk92jd0qLm7vTb3z",
    ),
    "the default credentials": ("    credentials='default',\n", "    credentials='default9',\n", "default9"),
    "a prefix joined to a name": (
        '        key = "_xxtpuv3internal_" + key_str\n',
        '        key = "_xxtpuv3internal9" + key_str\n',
        "_xxtpuv3internal9",
    ),
    "a path of a stored object": (
        "    key = 'arrow-datasets/nyc-taxi/year=2019/month=6/part-0.parquet'\n",
        "    key = 'arrow-datasets/Xk92jd0qLm7vTb3z/part-0.parquet'\n",
        "arrow-datasets/Xk92jd0qLm7vTb3z/part-0.parquet",
    ),
    "a file's name": (
        '    material_key = "CATMaterialRef.3dxml"\n',
        '    material_key = "CATMaterialRef9.3dxml"\n',
        "CATMaterialRef9.3dxml",
    ),
    "an expression in a comment": (
        "        # shared secret = PUBKEYtheirs * PRIVATEKEYours\n",
        "        # shared secret = PUBKEYtheirs *PRIVATEKEYours\n",
        "PUBKEYtheirs",
    ),
    "hex bytes counting up": (
        '    tv1_key = "000102030405060708090A0B0C0D0E0F"\n',
        '    tv1_key = "000102030405060708090A0B0C0D0E1F"\n',
        "000102030405060708090A0B0C0D0E1F",
    ),
    "a test server's password named after its user": (
        "        access_key='test_dataset_limited_user',\n        secret_key='limited123',\n",
        "        access_key='test_dataset_limited_user',\n        secret_key='limited1984',\n",
        "limited1984",
    ),
    "a label counting on": ("            token = 'token1234'\n", "            token = 'token2024'\n", "token2024"),
    "words after a bare key": (
        '        key = "6 days, 23:11:12"\n',
        '        key = "6days,23:11:12Xq"\n',
        "6days,23:11:12Xq",
    ),
    # the eighth round's (tuned-9, and every earlier part's hits read again)
    "a made-up password of a test": (
        "import unittest\n\n\nclass LoginTest(unittest.TestCase):\n    def test_login(self):\n"
        '        password = "secr3t"\n',
        "import unittest\n\n\nclass LoginTest(unittest.TestCase):\n    def test_login(self):\n"
        '        password = "Xk92jd0qLm7vTb3z"\n',
        "Xk92jd0qLm7vTb3z",
    ),
    "a made-up URL password of a test": (
        'def test_mask():\n    assert mask("postgresql://user:p4ss@db/app") == "postgresql://user:***@db/app"\n',
        'DATABASE_URL = "postgresql://user:p4ss@db/app"\n\n\ndef main():\n    connect(DATABASE_URL)\n',
        "p4ss",
    ),
    "the published TOTP key": (
        "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example\n",
        "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXQ&issuer=Example\n",
        "JBSWY3DPEHPK3PXQ",
    ),
    "RFC 5849's sample key": (
        'oauth_consumer_key="9djdj82h48djs9d2",\n',
        'oauth_consumer_key="9djdj82h48djs9d3",\n',
        "9djdj82h48djs9d3",
    ),
    "RFC 2617's Aladdin": (
        "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\n",
        "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZTE=\n",
        "QWxhZGRpbjpvcGVuIHNlc2FtZTE=",
    ),
    "a call of a package's function": ("my $pwd  = CPAN::anycwd();\n", "my $pwd  = 'Xk92jd0qL';\n", "Xk92jd0qL"),
    "a Perl pattern": (
        "my $Token = qr/[\\x21\\x23-\\x27\\x2A]/;\n",
        "my $Token = 'qX7r2Lm9Zt4Wv8Kp';\n",
        "qX7r2Lm9Zt4Wv8Kp",
    ),
    "Configure's answer": ("d_pwpasswd='define'\n", "d_pwpasswd='def1ne9Xq'\n", "def1ne9Xq"),
    "a Vim variable": ("let pwd = a:dict.istemp ? a:dict.tmpdir : '.'\n", "let pwd = 'a9Xk2dqL'\n", "a9Xk2dqL"),
    "an option of a documented command": (
        "          $ {command} my-cluster --region=us-central1 --password=postgres\n",
        "gcloud alloydb clusters create my-cluster --region=us-central1 --password=postgres\n",
        "postgres",
    ),
    "an option's name as a mapping's key": (
        '    "--secret": "dynamic",\n',
        '    "secret": "dynam1cXq",\n',
        "dynam1cXq",
    ),
    "a number among numbers": (
        '    EXPIRES_IN = {\n        "implicit": 3600,\n        "password": 864000,\n    }\n',
        '    ACCOUNT = {\n        "user": "deploy",\n        "password": 864000,\n    }\n',
        "864000",
    ),
    "escaped white space": ('credential = "\\n".join(parts)\n', 'credential = "Xk92jd0q"\n', "Xk92jd0q"),
    "a protocol's name in a description": (
        "    oauth2ClientSecret: OAuth2 client secret to use for the authentication\n",
        "    oauth2ClientSecret: OAuth2Xk9q client secret to use for the authentication\n",
        "OAuth2Xk9q",
    ),
    "a field's name the key abbreviates": (
        "CREDENTIAL_HELPER_KEY = 'credHelpers'\n",
        "CREDENTIAL_HELPER_KEY = 'credXk92Lq'\n",
        "credXk92Lq",
    ),
    # the ninth round's (tuned-10 and held-out-8)
    "a record's format": (
        "hostname:port:username:password:base_dn\n",
        "hostname:port:username:password:9f8Xk2q1\n",
        "9f8Xk2q1",
    ),
    "a command's output": ("    my $pwd = `cmd /c cd`;\n", "    const password = `Xk92jd0qL`;\n", "`Xk92jd0qL`"),
    "a setting named in prose": (
        "See LoadCredential= and SetCredential= above.\n",
        "SetCredential=above9Xq\n",
        "above9Xq",
    ),
    "a Vim function's argument": ("  let g:netrw_passwd=a:2\n", "  let g:netrw_passwd='a2Xk9qL'\n", "a2Xk9qL"),
    "an option in a synopsis": (
        "gcloud iam oauth-clients credentials delete (CREDENTIAL : --location=LOCATION --oauth-client=OAUTH_CLIENT)\n",
        "CREDENTIAL : Xk92jd0qLm\n",
        "Xk92jd0qLm",
    ),
    "a volume's key file": (
        "rd.luks.key=b40f1abf-2a53-400a-889a-2eccc27eaa40=/keyfile:LABEL=keydev\n",
        "rd.luks.key=b40f1abf2a53400a889a2eccc27eaa40\n",
        "b40f1abf2a53400a889a2eccc27eaa40",
    ),
    "an IPv6 interface identifier": ("Token=::1a:2b:3c:4d\n", "Token=1a2b3c4dXk92\n", "1a2b3c4dXk92"),
    "a template's doubled letters": (
        '"-smbios type=11,value=io.systemd.credential:xx=yy"\n',
        '"-smbios type=11,value=io.systemd.credential:xk=y9Lq2"\n',
        "xk=y9Lq2",
    ),
    "a documented command line continued": (
        "$ gcloud oracle-database autonomous-databases generate-wallet \\\n"
        "    my-instance --location=us-east4 --password=123Abpassword\n",
        "gcloud oracle-database autonomous-databases generate-wallet \\\n"
        "    my-instance --location=us-east4 --password=123Abpassword\n",
        "123Abpassword",
    ),
    # after declarations with a type were read (`X_SECRET: Final[str] = "…"`)
    "a run typed over and over": (
        'COGNITO_TOTP_MFA_SECRET = "asdfasdfasdf"\n',
        'COGNITO_TOTP_MFA_SECRET = "asdfasdfXk92"\n',
        "asdfasdfXk92",
    ),
    # after held-out-9 was read
    "a record's format as a manual page gives it": (
        ".B name:passwd:uid:gid:gecos:dir:shell\nhostname:port:username:password:base_dn:flags:\n",
        ".B name:passwd:9f8Xk2q1\n",
        "9f8Xk2q1",
    ),
    # the tenth round's (tuned-11 and held-out-9)
    "a value another key maps to": (
        'my %types = (\n    text     => "TextInput",\n    password => "TextInput",\n);\n',
        'my %types = (\n    text     => "TextInput",\n    password => "TextInput9Xq",\n);\n',
        "TextInput9Xq",
    ),
    "a URL template's port named by a word": (
        '# export http_proxy="http://proxyuser:proxypass@proxyhost:port".\n',
        '# export http_proxy="http://proxyuser:proxypass@proxyhost:3128".\n',
        "proxypass",
    ),
    "a Vim variable's index": (
        "    let s:netrw_passwd = s:netrw_hup[host].passwd\n",
        "    let s:netrw_passwd = 'Xk92jd0qL'\n",
        "Xk92jd0qL",
    ),
}


def test_thousands_of_secrets_in_one_result_are_each_found_once_in_order() -> None:
    # Kept findings are looked up by bisection: a token inside a password's value is still the token's finding.
    lines = [
        f'password="ghp_{i:04d}Xk92jd0qLm7vTb3zQw1eRt5yUi8oPaZx"\nurl=postgres://app:Pw{i:05d}q@db/x\n'
        for i in range(1500)
    ]
    found = find_secrets("".join(lines))
    assert [f.kind for f in found[:2]] == ["github-token", "connection-password"]
    assert len(found) == 3000
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))


def test_a_log_that_prints_a_failed_test_and_then_the_environment_keeps_its_secrets() -> None:
    # pytest shows the failing test's source; the CI job's environment dump after it is no test's literal.
    log = (
        "____ LoginTest.test_login ____\n\n    def test_login(self):\n>       assert login()\n"
        "E       AssertionError\n\n"
        "env:\nDB_PASSWORD=Winter2024\nREDIS_URL=redis://app:Summer2025@cache:6379/0\n"
    )
    assert [finding.value for finding in find_secrets(log)] == ["Winter2024", "Summer2025"]


def test_a_made_up_password_above_the_tests_of_its_file_is_still_a_secret() -> None:
    # Rust keeps a module's tests at its end: the code before `#[cfg(test)]` is not a test's.
    text = (
        'fn main() {\n    let password = "Winter2024!";\n}\n\n'
        '#[cfg(test)]\nmod tests {\n    fn login() {\n        let password = "secr3t";\n    }\n}\n'
    )
    assert [finding.value for finding in find_secrets(text)] == ["Winter2024!"]


#: Misses the third round fixed: a glued key word of a password is a key (`PGPASSWORD`), and of several names
#: assigned at once, the key takes the value at its place.
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("PGPASSWORD=pg\n", "pg"),
        ("export PGPASSWORD=postgres\n", "postgres"),
        ('user, password = "wile", "coyote"\n', "coyote"),
        ("        user, host, password = 'wile', 'h', 'coyote'\n", "coyote"),
    ],
)
def test_third_round_misses_are_found(text: str, value: str) -> None:
    assert [finding.value for finding in find_secrets(text)] == [value]


@pytest.mark.parametrize("rule", RULES, ids=list(RULES))
def test_a_rule_ends_its_false_alarm(rule: str) -> None:
    false_alarm, _, _ = RULES[rule]
    assert find_secrets(false_alarm) == []


@pytest.mark.parametrize("rule", RULES, ids=list(RULES))
def test_a_secret_of_the_same_shape_is_still_found(rule: str) -> None:
    _, secret, value = RULES[rule]
    assert [finding.value for finding in find_secrets(secret)] == [value]


#: Credentials of the shapes people and generators make, in the forms of code and config: none of the rules above
#: lets one through (the same 3000 seeded cases found the same findings before and after them).
CREDENTIALS = ["Xk92jd0qLm7vTb3z", "q8^Zr2!LmX7v", "Dragon1994!", "sunshine42", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"]
GENERATED = ["a1b2c3d4-e5f6-7890-abcd-ef1234567890", "live_Xk92jd0qLm7vTb3zQw1e", "Xk92jd0qLm7vTb3z"]
FORMS = ["{k}={v}\n", "{k}: {v}\n", '"{k}": "{v}",\n', "{k} = '{v}'\n", 'connect({k}="{v}")\n']


#: Declarations with their type between the name and the value: Python's annotations, TypeScript's, Rust's,
#: Kotlin's and Swift's. The type is not the value (`password: bool` holds none).
TYPED_FORMS = [
    '    {k}: str = "{v}"\n',
    '{k}: Optional[str] = "{v}"\n',
    '{k}: str | None = "{v}"\n',
    '    private readonly {k}: string = "{v}";\n',
    'const {k}: &str = "{v}";\n',
    'static {k}: &\'static str = "{v}";\n',
    'val {k}: String = "{v}"\n',
    'let {k}: String? = "{v}"\n',
]


@pytest.mark.parametrize(("key", "value"), [("DB_PASSWORD", "Dragon1994!"), ("api_key", "Xk92jd0qLm7vTb3z")])
@pytest.mark.parametrize("form", TYPED_FORMS)
def test_a_declaration_with_its_type_keeps_its_value_a_secret(key: str, value: str, form: str) -> None:
    assert [finding.value for finding in find_secrets(form.format(k=key, v=value))] == [value]


def test_a_condition_before_a_statement_is_no_declaration() -> None:
    assert find_secrets('if token: auth = "Bearer-x9"\n') == []


@pytest.mark.parametrize(
    ("key", "value"),
    [(key, value) for key in ("DB_PASSWORD", "client_secret") for value in CREDENTIALS]
    + [(key, value) for key in ("api_key", "access_token", "X-Api-Key") for value in GENERATED],
)
@pytest.mark.parametrize("form", FORMS)
def test_credentials_in_code_and_config_are_still_found(key: str, value: str, form: str) -> None:
    assert [finding.value for finding in find_secrets(form.format(k=key, v=value))] == [value]


def test_a_scanned_text_is_not_kept_alive_after_its_scan() -> None:
    # What a scan learns of a whole text (where its test code starts) lasts for that scan: a server that kept the
    # last results' texts would hold megabytes each long after answering them.
    class Result(str):
        pass

    text = Result("import unittest\n\ndef test_login():\n    password = 'secr3t'\n" + "x = 1\n" * 10_000)
    assert find_secrets(text) == []
    alive = weakref.ref(text)
    del text
    gc.collect()
    assert alive() is None
