"""Secrets in tool results: found, kept in a table of their own, shown to the model only as handles."""

from offprompt.secrets.detect import Finding, find_secrets, json_may_hold_secret, may_hold_secret, may_hold_secret_in
from offprompt.secrets.redact import HANDLE_MARK, VAULT_FILE, Redactor, holds_handle
from offprompt.secrets.vault import HANDLE, SecretVault

__all__ = [
    "HANDLE",
    "HANDLE_MARK",
    "VAULT_FILE",
    "Finding",
    "Redactor",
    "SecretVault",
    "find_secrets",
    "holds_handle",
    "json_may_hold_secret",
    "may_hold_secret",
    "may_hold_secret_in",
]
