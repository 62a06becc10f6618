"""Secrets of the formats an outside comparison found missed, each in the four contexts a tool result brings them:
a CI log, an `env` dump, a JSON API answer and the format's own file. Every value is fake and random (seeded)."""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

import pytest

from offprompt.secrets import find_secrets

_RNG = random.Random(40)
_BASE62 = string.ascii_letters + string.digits


def _random(alphabet: str, size: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(size))


def _in_contexts(name: str, env: str, own_file: str) -> list[tuple[str, str]]:
    """The four contexts of one secret: `env` is its `env` dump line, `own_file` the file of its own format."""
    log = "".join(f"2026-07-01T10:00:{i:02}Z [deploy] {line}\n" for i, line in enumerate(own_file.splitlines()))
    api = json.dumps({"id": 7, "status": "ok", "output": own_file})
    dump = f"HOME=/home/runner\nPATH=/usr/bin:/bin\n{env}\nSHLVL=1\n"
    return [(f"{name} in a CI log", log), (f"{name} in an env dump", dump), (f"{name} in a JSON API answer", api),
            (f"{name} in its own file", own_file)]  # fmt: skip


def _docker() -> tuple[str, list[tuple[str, str]]]:
    credentials = f"{_random(string.ascii_lowercase, 8)}:{_random(_BASE62, 20)}"
    auth = base64.b64encode(credentials.encode()).decode()
    config = {"auths": {"https://index.docker.io/v1/": {"auth": auth}, "ghcr.io": {}}, "credsStore": ""}
    env = "DOCKER_AUTH_CONFIG=" + json.dumps(config, separators=(",", ":"))
    return auth, _in_contexts("a Docker config.json auth", env, json.dumps(config, indent="\t") + "\n")


def _huggingface() -> tuple[str, list[tuple[str, str]]]:
    token = "hf_" + _random(string.ascii_letters, 34)
    own = f"token: {token}\n"  # huggingface-cli's stored token, as `huggingface-cli env` prints it
    return token, _in_contexts("a Hugging Face token of letters only", f"HF_TOKEN={token}", own)


def _aws_slash() -> tuple[str, list[tuple[str, str]]]:
    secret = "/" + _random(_BASE62 + "+/", 39)
    own = f"[default]\naws_access_key_id = AKIA{_random(string.ascii_uppercase + string.digits, 16)}\n"
    own += f"aws_secret_access_key = {secret}\nregion = eu-west-1\n"
    return secret, _in_contexts("an AWS secret key starting with /", f"AWS_SECRET_ACCESS_KEY={secret}", own)


#: The names of a variable list's entries, each with a value of its own shape.
_VARIABLES: dict[str, Callable[[], str]] = {
    "DB_PASSWORD": lambda: _random(_BASE62 + "!#%", 18),
    "TWILIO_AUTH_TOKEN": lambda: _random("0123456789abcdef", 32),
    "DD_API_KEY": lambda: _random("0123456789abcdef", 32),
    "AWS_SECRET_ACCESS_KEY": lambda: _random(_BASE62 + "+/", 40),
}


def _kubernetes_env(name: str, value: str) -> str:
    # The shape of a Deployment's container `env` (kubernetes.io/docs/tasks/inject-data-application), written here.
    return (
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - name: web\n        image: shop/web:1.4\n        env:\n        - name: LOG_LEVEL\n"
        f'          value: info\n        - name: {name}\n          value: "{value}"\n'
    )


def _ecs_environment(name: str, value: str) -> str:
    # An ECS task definition's `environment` (`aws ecs describe-task-definition`), written here.
    entries = [{"name": "PORT", "value": "8080"}, {"name": name, "value": value}]
    return json.dumps({"containerDefinitions": [{"name": "web", "environment": entries}]}, indent=2)


def _actions_variables(name: str, value: str) -> str:
    # GitHub Actions' list of repository variables (GET /repos/{owner}/{repo}/actions/variables), written here.
    variable = {"name": name, "value": value, "created_at": "2026-01-10T08:00:00Z"}
    return json.dumps({"total_count": 1, "variables": [variable]})


def _key_value_list(name: str, value: str) -> str:
    # A `{"key": …, "value": …}` list, as Terraform's outputs of a list of objects and many APIs give it.
    return json.dumps({"env": [{"key": "REGION", "value": "eu-west-1"}, {"key": name, "value": value}]}, indent=2)


def _variable_lists() -> list[tuple[str, str, str]]:
    cases = []
    for name, make in _VARIABLES.items():
        for shape in (_kubernetes_env, _ecs_environment, _actions_variables, _key_value_list):
            value = make()
            own = shape(name, value)
            env = "TASK_ENV=" + json.dumps([{"name": name, "value": value}], separators=(",", ":"))
            for context, text in _in_contexts(f"{name} in {shape.__name__[1:]}", env, own):
                cases.append((context, text, value))
    return cases


_FORMATS = (_docker(), _huggingface(), _aws_slash())
CASES = [(context, text, value) for value, contexts in _FORMATS for context, text in contexts] + _variable_lists()


@pytest.mark.parametrize(("context", "text", "value"), CASES, ids=[case[0] for case in CASES])
def test_the_secret_is_found_whole_in_every_context(context: str, text: str, value: str) -> None:
    found = [finding.value.replace("\\/", "/") for finding in find_secrets(text)]
    assert value in found, context


def _alnum(size: int) -> str:
    return _random(_BASE62, size)


def _jwt() -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': _alnum(12), 'iat': 1767225600})}.{_alnum(43)}"


#: Every format of a known shape, each a fake random value after the variable a user would keep it in.
KNOWN_FORMATS: dict[str, tuple[str, Callable[[], str]]] = {
    "github-token": ("GITHUB_TOKEN", lambda: "ghp_" + _alnum(36)),
    "github-pat": ("GH_PAT", lambda: "github_pat_" + _alnum(22) + "_" + _alnum(59)),
    "gitlab-token": ("GITLAB_TOKEN", lambda: "glpat-" + _alnum(20)),
    "slack-token": ("SLACK_BOT_TOKEN", lambda: f"xoxb-{_random(string.digits, 12)}-{_alnum(24)}"),
    "stripe-key": ("STRIPE_SECRET_KEY", lambda: "sk_live_" + _alnum(24)),
    "anthropic-api-key": ("ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + _alnum(40)),
    "openai-api-key": ("OPENAI_API_KEY", lambda: "sk-proj-" + _alnum(48)),
    "google-api-key": ("GOOGLE_API_KEY", lambda: "AIza" + _alnum(35)),
    "google-oauth-secret": ("GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + _alnum(28)),
    "npm-token": ("NPM_TOKEN", lambda: "npm_" + _alnum(36)),
    "huggingface-token": ("HF_TOKEN", lambda: "hf_" + _alnum(34)),
    "sendgrid-key": ("SENDGRID_API_KEY", lambda: f"SG.{_alnum(22)}.{_alnum(43)}"),
    "aws-access-key": ("AWS_ACCESS_KEY_ID", lambda: "AKIA" + _random(string.ascii_uppercase + string.digits, 16)),
    "aws-secret-key": ("AWS_SECRET_ACCESS_KEY", lambda: _random(_BASE62 + "+/", 40)),
    "jwt": ("ID_TOKEN", _jwt),
    "password": ("DB_PASSWORD", lambda: _alnum(14) + "!"),
}


def _known_format_cases() -> list[tuple[str, str, str]]:
    cases = []
    for kind, (name, make) in KNOWN_FORMATS.items():
        value = make()
        own = f"{name.lower()} = {json.dumps(value)}\n"  # a config file of its own (TOML, INI-like)
        for context, text in _in_contexts(kind, f"{name}={value}", own):
            cases.append((context, text, value))
    return cases


KNOWN_CASES = _known_format_cases()


@pytest.mark.parametrize(("context", "text", "value"), KNOWN_CASES, ids=[case[0] for case in KNOWN_CASES])
def test_every_known_format_is_found_whole_in_every_context(context: str, text: str, value: str) -> None:
    assert value in [finding.value for finding in find_secrets(text)], context
