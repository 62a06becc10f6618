"""Detection over the corpus: every secret caught with its kind, every look-alike left alone."""

from __future__ import annotations

import itertools

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
