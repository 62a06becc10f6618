"""A held-out corpus: secrets and look-alikes written after the detectors were tuned, and not tuned on.

`corpus.py` is what the patterns were written against, so its figures say what the detectors were made to do;
these say how they fare on outputs they were not shaped by (other tools, other contexts, forms docs/secrets.md
lists as not caught). Its figures are measured, not required: `python -m tests.secrets.figures` prints them and
tests/secrets/test_detect.py checks docs/secrets.md states them. Values come from a seeded generator, none is
real.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid

from tests.secrets.corpus import B62, B64, HEX, URLSAFE, Case

_rng = random.Random(20261201)  # its own values, not the tuned corpus's


def tok(n: int, alphabet: str = B62) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _pem(label: str, lines: int) -> str:
    body = "\n".join(tok(64, B64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{tok(12, B64)}==\n-----END {label}-----"


def _jwt() -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    header = part({"alg": "HS256", "typ": "JWT"})
    payload = part({"sub": tok(10), "role": "admin", "iat": 1764460800})
    return f"{header}.{payload}.{tok(43, URLSAFE)}"


EC_KEY = _pem("EC PRIVATE KEY", 3)
TF_AWS_ID = "AKIA" + tok(16, string.ascii_uppercase + string.digits)
TF_AWS_SECRET = tok(40, B64)
GHO = "gho_" + tok(36)
XOXP = f"xoxp-{tok(11, string.digits)}-{tok(12, string.digits)}-{tok(13, string.digits)}-{tok(32, HEX)}"
STRIPE_TEST = "sk_test_" + tok(99)
SESSION_JWT = _jwt()
REDIS_PASSWORD = tok(24)
OPENAI_LEGACY = "sk-" + tok(20) + "T3BlbkFJ" + tok(20)
AZURE_ACCOUNT_KEY = tok(86, B64) + "=="
NETRC_PASSWORD = tok(20)
MYSQL_PASSWORD = tok(14)
CURL_PASSWORD = tok(16)
DOCKER_PASSWORD = tok(22)
DOCKER_AUTH = base64.b64encode(f"ci-bot:{tok(18)}".encode()).decode()
API_KEY_HEADER = tok(32, HEX)

HELD_OUT_SECRETS: tuple[Case, ...] = (
    Case(
        "EC private key in a Kubernetes secret manifest",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  tls.key: |\n"
        + "\n".join(f"    {line}" for line in EC_KEY.splitlines())
        + "\n",
        (("private-key", EC_KEY.splitlines()[1]),),
    ),
    Case(
        "AWS keys in a Terraform state file",
        json.dumps(
            {
                "version": 4,
                "resources": [
                    {
                        "type": "aws_iam_access_key",
                        "name": "ci",
                        "instances": [{"attributes": {"id": TF_AWS_ID, "secret": TF_AWS_SECRET, "user": "ci"}}],
                    }
                ],
            },
            indent=2,
        ),
        (("aws-access-key", TF_AWS_ID), ("aws-secret-key", TF_AWS_SECRET)),
    ),
    Case(
        "GitHub OAuth token in gh's hosts.yml",
        f"github.com:\n    user: dev\n    oauth_token: {GHO}\n    git_protocol: https\n",
        (("github-token", GHO),),
    ),
    Case(
        "Slack user token in a Python script",
        f'from slack_sdk import WebClient\nclient = WebClient(token="{XOXP}")\n',
        (("slack-token", XOXP),),
    ),
    Case(
        "Stripe test key in .env.test",
        f"APP_ENV=test\nSTRIPE_KEY={STRIPE_TEST}\n",
        (("stripe-key", STRIPE_TEST),),
    ),
    Case(
        "JWT in a session cookie of an HTTP trace",
        f"GET /admin HTTP/1.1\r\nHost: app.acme.dev\r\nCookie: theme=dark; session={SESSION_JWT}\r\n\r\n",
        (("jwt", SESSION_JWT),),
    ),
    Case(
        "Redis URL with a password and no user",
        f"2026-12-01 09:00:00 worker: broker redis://:{REDIS_PASSWORD}@cache.internal:6379/2 ready\n",
        (("connection-password", REDIS_PASSWORD),),
    ),
    Case(
        "legacy OpenAI key in a notebook cell",
        f"import openai\nopenai.api_key = '{OPENAI_LEGACY}'\n",
        (("openai-api-key", OPENAI_LEGACY),),
    ),
    Case(
        "Azure storage key in appsettings.json",
        json.dumps({"Storage": {"AccountName": "acmelogs", "AccountKey": AZURE_ACCOUNT_KEY}}, indent=2),
        (("azure-storage-key", AZURE_ACCOUNT_KEY),),
    ),
    Case(
        "X-Api-Key header in an access log",
        f'10.0.0.7 - - [01/Dec/2026:09:00:01] "GET /v2/reports" 200 "X-Api-Key: {API_KEY_HEADER}"\n',
        (("api-key", API_KEY_HEADER),),
    ),
    Case(
        "Docker config.json auth",
        json.dumps({"auths": {"registry.acme.dev": {"auth": DOCKER_AUTH}}}, indent=2),
        (("docker-auth", DOCKER_AUTH),),
    ),
    Case(
        ".netrc",
        f"machine api.heroku.com\n  login dev@acme.dev\n  password {NETRC_PASSWORD}\n",
        (("password", NETRC_PASSWORD),),
    ),
    Case(
        "mysql -p in a shell history",
        f"  88  mysql -h db.internal -u root -p{MYSQL_PASSWORD} shop\n  89  exit\n",
        (("password", MYSQL_PASSWORD),),
    ),
    Case(
        "curl -u in a CI log",
        f"+ curl -sf -u deploy:{CURL_PASSWORD} https://nexus.acme.dev/repository/releases/app.jar -O\n",
        (("password", CURL_PASSWORD),),
    ),
    Case(
        "docker login from stdin in a CI script",
        f"echo {DOCKER_PASSWORD} | docker login registry.acme.dev -u ci --password-stdin\n",
        (("password", DOCKER_PASSWORD),),
    ),
)


HELD_OUT_LOOKALIKES: tuple[Case, ...] = (
    Case("AWS ARNs and account ids", "arn:aws:iam::123456789012:role/deploy\narn:aws:s3:::acme-logs/2026/12/01\n"),
    Case(
        "GitHub Actions secrets references",
        "env:\n  DB_PASSWORD: ${{ secrets.DB_PASSWORD }}\n  TOKEN: ${{ github.token }}\n",
    ),
    Case(
        "pip requirements with hashes",
        "\n".join(f"pkg{i}==1.{i}.0 \\\n    --hash=sha256:{tok(64, HEX)}" for i in range(4)),
    ),
    Case("Kubernetes object uids", "\n".join(f"uid: {uuid.UUID(int=_rng.getrandbits(128))}" for _ in range(4))),
    Case("MongoDB ObjectIds", json.dumps([{"_id": {"$oid": tok(24, HEX)}} for _ in range(4)])),
    Case(
        "Subresource integrity in HTML",
        f'<script src="/app.js" integrity="sha384-{tok(64, B64)}" crossorigin="anonymous"></script>',
    ),
    Case("Postgres URL without a password", "DATABASE_URL=postgres://app@db:5432/shop?sslmode=require\n"),
    Case(
        "shell variables in auth headers",
        'curl -H "Authorization: Bearer $GITHUB_TOKEN" -H "X-Api-Key: ${API_KEY}" https://api.acme.dev\n',
    ),
    Case("short git SHAs in a rebase todo", "\n".join(f"pick {tok(7, HEX)} fix token refresh #{i}" for i in range(6))),
    Case(
        "password policy in a config dump",
        "password_min_length = 12\npassword_expiry_days: 90\ntoken_ttl_seconds=3600\nkey_rotation: monthly\n",
    ),
)
