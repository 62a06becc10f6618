"""Secrets in realistic tool outputs, and look-alikes that must pass unchanged.

The secret values are made here from a seeded generator (none is real, none sits in the source as a literal);
each case is the text a tool would return (a config file, an env dump, a log, a JSON answer) and the values in
it that must never reach the model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass

_rng = random.Random(20261130)
B62 = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = B62 + "+/"
URLSAFE = B62 + "-_"


def tok(n: int, alphabet: str = B62) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    secrets: tuple[tuple[str, str], ...] = ()  # (kind, value) that must be replaced


def _pem(label: str, lines: int = 25) -> str:
    body = "\n".join(tok(64, B64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{tok(20, B64)}==\n-----END {label}-----"


def _jwt() -> str:
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": tok(8)}).encode())
    payload = b64url(json.dumps({"sub": tok(12), "iss": "https://auth.acme.dev", "exp": 1800000000}).encode())
    return f"{header}.{payload}.{tok(86, URLSAFE)}"


RSA_KEY = _pem("RSA PRIVATE KEY")
OPENSSH_KEY = _pem("OPENSSH PRIVATE KEY", 12)
GCP_PKCS8 = _pem("PRIVATE KEY", 16)
AWS_ID = "AKIA" + tok(16, UPPER_DIGITS)
AWS_SECRET = tok(40, B64)
AWS_SESSION_ID = "ASIA" + tok(16, UPPER_DIGITS)
AWS_SESSION_SECRET = tok(40, B64)
AWS_SESSION_TOKEN = "IQoJb3JpZ2luX2VjE" + tok(300, B64)
GHP = "ghp_" + tok(36)
GHS = "ghs_" + tok(36)
GITHUB_PAT = "github_pat_" + tok(22) + "_" + tok(59)
GLPAT = "glpat-" + tok(20, URLSAFE)
SLACK_BOT = f"xoxb-{tok(12, string.digits)}-{tok(13, string.digits)}-{tok(24)}"
SLACK_HOOK = f"https://hooks.slack.com/services/T{tok(8, UPPER_DIGITS)}/B{tok(10, UPPER_DIGITS)}/{tok(24)}"
STRIPE_LIVE = "sk_live_" + tok(99)
STRIPE_RESTRICTED = "rk_live_" + tok(40)
OPENAI = "sk-proj-" + tok(74, URLSAFE) + "T3BlbkFJ" + tok(74, URLSAFE)
ANTHROPIC = "sk-ant-api03-" + tok(93, URLSAFE) + "-" + tok(6) + "AA"
GOOGLE_API = "AIza" + tok(35, URLSAFE)
GOOGLE_OAUTH = "ya29." + tok(160, URLSAFE)
AZURE_KEY = tok(86, B64) + "=="
AZURE_SIG = tok(43, B62) + "%3D"
JWT = _jwt()
OPAQUE_BEARER = tok(48, URLSAFE)
BASIC_USER_PASS = base64.b64encode(f"deploy:{tok(18)}".encode()).decode()
PROPS_PASSWORD = tok(14, B62 + "!#%")
JSON_PASSWORD = "Tr0ub4dor&3-" + tok(6)
PG_PASSWORD = tok(20)
MONGO_PASSWORD = tok(16)
NPM = "npm_" + tok(36)
PYPI = "pypi-AgEIcHlwaS5vcmc" + tok(120, URLSAFE)
SENDGRID = f"SG.{tok(22, URLSAFE)}.{tok(43, URLSAFE)}"
HF = "hf_" + tok(34)
CLIENT_SECRET = "GOCSPX-" + tok(28, URLSAFE)

SECRETS: tuple[Case, ...] = (
    Case(
        "RSA private key (file read)",
        f"$ cat deploy/id_rsa\n{RSA_KEY}\n",
        (("private-key", RSA_KEY),),
    ),
    Case(
        "OpenSSH private key (file read)",
        f"{OPENSSH_KEY}\n",
        (("private-key", OPENSSH_KEY),),
    ),
    Case(
        "GCP service account JSON",
        json.dumps(
            {
                "type": "service_account",
                "project_id": "acme-prod-4411",
                "private_key_id": tok(40, HEX),
                "private_key": GCP_PKCS8 + "\n",
                "client_email": "ci@acme-prod-4411.iam.gserviceaccount.com",
                "client_id": tok(21, string.digits),
            },
            indent=2,
        ),
        (("private-key", json.dumps(GCP_PKCS8)[1:-1]),),  # as the JSON text holds it, \\n escaped
    ),
    Case(
        "AWS credentials file",
        f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\nregion = eu-west-1\n",
        (("aws-access-key", AWS_ID), ("aws-secret-key", AWS_SECRET)),
    ),
    Case(
        "AWS STS JSON answer",
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": AWS_SESSION_ID,
                    "SecretAccessKey": AWS_SESSION_SECRET,
                    "SessionToken": AWS_SESSION_TOKEN,
                    "Expiration": "2026-11-30T18:00:00Z",
                }
            },
            indent=4,
        ),
        (
            ("aws-access-key", AWS_SESSION_ID),
            ("aws-secret-key", AWS_SESSION_SECRET),
            ("aws-session-token", AWS_SESSION_TOKEN),
        ),
    ),
    Case(
        "GitHub token in .env",
        f"NODE_ENV=production\nGITHUB_TOKEN={GHP}\nPORT=8080\n",
        (("github-token", GHP),),
    ),
    Case(
        "GitHub app token in a git remote",
        f"origin\thttps://x-access-token:{GHS}@github.com/acme/api.git (fetch)\n",
        (("github-token", GHS),),
    ),
    Case(
        "GitHub fine-grained PAT in a shell history",
        f"  501  export GH_TOKEN={GITHUB_PAT}\n  502  gh repo list acme\n",
        (("github-token", GITHUB_PAT),),
    ),
    Case(
        "GitLab token in a CI log",
        f"$ git clone https://oauth2:{GLPAT}@gitlab.com/acme/infra.git\nCloning into 'infra'...\n",
        (("gitlab-token", GLPAT),),
    ),
    Case(
        "Slack bot token in JSON config",
        json.dumps({"slack": {"bot_token": SLACK_BOT, "channel": "#deploys"}}),
        (("slack-token", SLACK_BOT),),
    ),
    Case(
        "Slack webhook in YAML",
        f"notify:\n  on_failure: true\n  webhook: {SLACK_HOOK}\n",
        (("slack-webhook", SLACK_HOOK),),
    ),
    Case(
        "Stripe keys in an env dump",
        f"HOME=/root\nSTRIPE_SECRET_KEY={STRIPE_LIVE}\nSTRIPE_RESTRICTED={STRIPE_RESTRICTED}\nLANG=C.UTF-8\n",
        (("stripe-key", STRIPE_LIVE), ("stripe-key", STRIPE_RESTRICTED)),
    ),
    Case(
        "OpenAI key in .env",
        f"# local dev\nOPENAI_API_KEY={OPENAI}\n",
        (("openai-api-key", OPENAI),),
    ),
    Case(
        "Anthropic key in a shell profile",
        f'export ANTHROPIC_API_KEY="{ANTHROPIC}"\nalias ll="ls -la"\n',
        (("anthropic-api-key", ANTHROPIC),),
    ),
    Case(
        "Google API key in front-end config",
        f'const firebaseConfig = {{\n  apiKey: "{GOOGLE_API}",\n  authDomain: "acme.firebaseapp.com",\n}};\n',
        (("google-api-key", GOOGLE_API),),
    ),
    Case(
        "Google OAuth token and client secret in JSON",
        json.dumps({"access_token": GOOGLE_OAUTH, "expires_in": 3599, "client_secret": CLIENT_SECRET}),
        (("google-oauth-token", GOOGLE_OAUTH), ("google-oauth-secret", CLIENT_SECRET)),
    ),
    Case(
        "Azure storage connection string",
        "ConnectionStrings__Blob=DefaultEndpointsProtocol=https;AccountName=acmeprod;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net\n",
        (("azure-storage-key", AZURE_KEY),),
    ),
    Case(
        "Azure SAS URL in a log",
        f"GET https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2026-12-01T00:00:00Z&sig={AZURE_SIG} 200 1.2s\n",
        (("azure-sas-token", AZURE_SIG),),
    ),
    Case(
        "JWT in a JSON API answer",
        json.dumps({"token_type": "Bearer", "access_token": JWT, "expires_in": 3600}),
        (("jwt", JWT),),
    ),
    Case(
        "Bearer token in a curl -v log",
        f"> GET /v1/orders HTTP/2\n> Host: api.acme.dev\n> Authorization: Bearer {OPAQUE_BEARER}\n> Accept: */*\n",
        (("bearer-token", OPAQUE_BEARER),),
    ),
    Case(
        "Basic auth in an HTTP trace",
        f"POST /deploy HTTP/1.1\r\nAuthorization: Basic {BASIC_USER_PASS}\r\nContent-Length: 0\r\n",
        (("basic-auth", BASIC_USER_PASS),),
    ),
    Case(
        "password= in a properties file",
        f"spring.datasource.url=jdbc:mysql://db:3306/shop\nspring.datasource.password={PROPS_PASSWORD}\n",
        (("password", PROPS_PASSWORD),),
    ),
    Case(
        '"password": in a JSON API answer',
        json.dumps({"user": "svc-backup", "password": JSON_PASSWORD, "rotated": "2026-11-01"}, indent=2),
        (("password", JSON_PASSWORD),),
    ),
    Case(
        "Postgres URL in docker-compose",
        f"services:\n  api:\n    environment:\n      DATABASE_URL: postgres://app:{PG_PASSWORD}@db:5432/shop\n",
        (("connection-password", PG_PASSWORD),),
    ),
    Case(
        "MongoDB SRV string in a log",
        f"2026-11-30T12:00:01Z INFO connecting to mongodb+srv://reader:{MONGO_PASSWORD}@cluster0.x1y2z.mongodb.net/app\n",
        (("connection-password", MONGO_PASSWORD),),
    ),
    Case(
        "npm token in .npmrc",
        f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={NPM}\n",
        (("npm-token", NPM),),
    ),
    Case(
        "PyPI token in .pypirc",
        f"[pypi]\nusername = __token__\npassword = {PYPI}\n",
        (("pypi-token", PYPI),),
    ),
    Case(
        "SendGrid key in settings.py",
        f'EMAIL_BACKEND = "sendgrid_backend.SendgridBackend"\nSENDGRID_API_KEY = "{SENDGRID}"\n',
        (("sendgrid-key", SENDGRID),),
    ),
    Case(
        "Hugging Face token in a notebook cell",
        f'from huggingface_hub import login\nlogin(token="{HF}")\n',
        (("huggingface-token", HF),),
    ),
)


def _png_data_uri() -> str:
    png = b"\x89PNG\r\n\x1a\n" + bytes(_rng.getrandbits(8) for _ in range(3000))
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _git_log() -> str:
    lines = []
    for i in range(8):
        sha = hashlib.sha1(f"commit {i}".encode()).hexdigest()
        lines.append(f"commit {sha}\nAuthor: Dev <dev@acme.dev>\n\n    fix #{100 + i}: tidy the parser\n")
    return "\n".join(lines)


def _sha256sums() -> str:
    return "\n".join(
        f"{hashlib.sha256(name.encode()).hexdigest()}  {name}" for name in ("app.tar.gz", "app.whl", "README.md")
    )


LOOKALIKES: tuple[Case, ...] = (
    Case("UUIDs in a JSON list", json.dumps([{"id": str(uuid.UUID(int=_rng.getrandbits(128)))} for _ in range(5)])),
    Case("git log with full SHAs", _git_log()),
    Case("sha256sum output", _sha256sums()),
    Case("base64 PNG in HTML", f'<img alt="chart" src="{_png_data_uri()}">'),
    Case(
        "AWS documentation example keys",
        "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    ),
    Case("Stripe documentation example key", 'stripe.api_key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"\n'),
    Case(
        "jwt.io example token",
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikpv"
        "aG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c' https://api.example.com",
    ),
    Case("masked password", "db:\n  host: localhost\n  user: app\n  password: ********\n"),
    Case("password read from the environment", 'password = os.environ["DB_PASSWORD"]\ntoken = os.getenv("TOKEN")\n'),
    Case("template variables", "DB_PASSWORD=${DB_PASSWORD}\nAPI_KEY={{ secrets.API_KEY }}\nSECRET=<your-secret>\n"),
    Case("null and boolean values", json.dumps({"password": None, "require_password": True, "api_key": ""})),
    Case("bcrypt hash field", '{"username": "ann", "password_hash": "$2b$12$' + tok(53, B62 + "./") + '"}'),
    Case("URLs without passwords", "https://github.com/acme/api.git\nssh://git@github.com:22/acme/api.git\n"),
    Case("host:port URLs", "listening on http://127.0.0.1:8080/ and redis://cache:6379/0\n"),
    Case("SSH public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{tok(43, B64)} dev@laptop\n"),
    Case("certificate and public key PEM", _pem("CERTIFICATE") + "\n" + _pem("PUBLIC KEY", 6)),
    Case(
        "npm lockfile integrity",
        json.dumps({"node_modules/left-pad": {"version": "1.3.0", "integrity": "sha512-" + tok(86, B64) + "=="}}),
    ),
    Case("docker image digest", f"acme/api@sha256:{tok(64, HEX)}\nStatus: Image is up to date\n"),
    Case(
        "test summary and token counts", "pass: 12, fail: 3, skip: 1\nmax_tokens=2000 tokens: 1834 token_count: 512\n"
    ),
    Case("pagination tokens", json.dumps({"items": [], "nextPageToken": tok(24), "next_page_token": tok(24)})),
    Case(
        "placeholder keys in a README",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nOPENAI_API_KEY=sk-...\n"
        "ANTHROPIC_API_KEY=your-api-key-here\n",
    ),
    Case("CSS class names", '<div class="sk-spinner sk-circle-bounce-animation-delay-element-1 desk-top-nav">'),
    Case(
        "prose about keys", "Set the API key in settings. The password must be 12 characters; basic plans include it.\n"
    ),
    Case("hex request ids in a log", "\n".join(f"req={tok(32, HEX)} status=200 took={i}ms" for i in range(5))),
)
