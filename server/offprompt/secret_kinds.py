"""The kinds of secret the detector names (`⟦secret:id kind⟧`): what a config's `secrets_allow` may list.

Here, at the bottom, so the config can check a `secrets_allow` entry and the detector can name its findings,
without either importing the other. tests/secrets/test_detect.py checks that every detector's kind is listed.
"""

SECRET_KINDS: frozenset[str] = frozenset(
    {
        "anthropic-api-key", "api-key", "aws-access-key", "aws-secret-key", "aws-session-token", "azure-sas-token",
        "azure-storage-key", "basic-auth", "bearer-token", "connection-password", "github-token", "gitlab-token",
        "google-api-key", "google-oauth-secret", "google-oauth-token", "huggingface-token", "jwt", "npm-token",
        "openai-api-key", "password", "private-key", "pypi-token", "secret", "sendgrid-key", "slack-token",
        "slack-webhook", "stripe-key", "token",
    }
)  # fmt: skip
