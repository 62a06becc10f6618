"""Secret handles on a shared memory: one replica gives a handle, another behind the same balancer fills it in;
the database holds neither a value nor a plain hash of one, and the owner and producer bindings still hold."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import psycopg
import pytest

from offprompt.arguments import Receiver, fill
from offprompt.errors import ConfigError, SecretNotSharedError, UnknownSecretError
from offprompt.memory.task_memory import TaskMemory
from offprompt.secrets import HANDLE, Redactor
from tests.secrets.corpus import GHP

pytestmark = pytest.mark.postgres

KEY = "correct-horse-battery-staple-0123456789"


def _filled(redactor: Redactor, memory: TaskMemory, handle: str, owner: str, server: str) -> object:
    receiver = Receiver(server, "push", owner, None, None, {}, {})
    return fill({"token": handle}, receiver, redactor, memory).arguments


def test_a_handle_one_replica_gives_another_fills_in_and_the_database_holds_no_value(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str
) -> None:
    a, b = open_memory(secrets_key=KEY), open_memory(secrets_key=KEY)
    at_a, at_b = Redactor(a.secret_store), Redactor(b.secret_store)  # as each replica's result boundary has it

    redacted = at_a.redact_text(f"GITHUB_TOKEN={GHP}", "team-a", "git")
    found = HANDLE.search(redacted)
    assert found is not None
    handle = found.group()
    assert _filled(at_b, b, handle, "team-a", "git") == {"token": GHP}  # resolved by the other replica
    assert at_b.redact_text(f"again {GHP}", "team-a", "git") == f"again {handle}"  # one value, one handle

    with pytest.raises(UnknownSecretError):
        _filled(at_b, b, handle, "team-b", "git")  # another caller's handle is unknown to it
    with pytest.raises(SecretNotSharedError):
        _filled(at_b, b, handle, "team-a", "web")  # a server whose output did not hold it gets nothing

    schema = a.text._db.schema  # type: ignore[attr-defined]
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute(f'SELECT digest, nonce, sealed, kind FROM "{schema}".secrets').fetchall()
    assert len(rows) == 1
    stored = b"".join(bytes(c) if isinstance(c, bytes | memoryview) else str(c).encode() for c in rows[0])
    assert GHP.encode() not in stored
    assert hashlib.sha256(f"team-a\0{GHP}".encode()).digest() != bytes(rows[0][0])  # a keyed digest, not a hash


def test_a_replica_with_another_key_cannot_read_the_handles(open_memory: Callable[..., TaskMemory]) -> None:
    a = open_memory(secrets_key=KEY)
    other = open_memory(secrets_key="x" * 40)
    found = HANDLE.search(Redactor(a.secret_store).redact_text(f"token {GHP}", "team-a", "git"))
    assert found is not None
    with pytest.raises(ConfigError, match='needs the same "secrets_key"'):
        Redactor(other.secret_store).vault.reveal(found.group("id"), "team-a")


def test_without_a_key_each_replica_keeps_its_own_table(open_memory: Callable[..., TaskMemory]) -> None:
    a, b = open_memory(), open_memory()
    found = HANDLE.search(Redactor(a.secret_store).redact_text(f"token {GHP}", "team-a", "git"))
    assert found is not None
    with pytest.raises(UnknownSecretError):
        _filled(Redactor(b.secret_store), b, found.group(), "team-a", "git")
