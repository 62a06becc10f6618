"""The secrets table: values stay in a 0600 file, one handle per value and owner, none across owners."""

from __future__ import annotations

import stat
from pathlib import Path

from offprompt.secrets import HANDLE, SecretVault
from offprompt.secrets.vault import Secret
from tests.secrets.corpus import AWS_ID, GHP


def test_the_table_file_is_readable_by_its_user_alone(tmp_path: Path) -> None:
    vault = SecretVault(tmp_path / "mem" / "secrets.sqlite3")
    vault.handle(GHP, "github-token", "", "s")
    vault.close()
    assert stat.S_IMODE((tmp_path / "mem" / "secrets.sqlite3").stat().st_mode) == 0o600
    assert not list((tmp_path / "mem").glob("*-wal"))


def test_the_same_value_for_the_same_owner_gets_the_same_handle(tmp_path: Path) -> None:
    vault = SecretVault(tmp_path / "secrets.sqlite3")
    first = vault.handle(GHP, "github-token", "alice", "s")
    assert vault.handle(GHP, "password", "alice", "s") == first  # the first kind seen stays
    assert vault.handle(AWS_ID, "aws-access-key", "alice", "s") != first
    match = HANDLE.fullmatch(first)
    assert match is not None
    assert first.endswith(" github-token⟧")
    assert vault.reveal(match["id"], "alice") == Secret(GHP, frozenset({"s"}))


def test_a_handle_resolves_only_for_its_owner(tmp_path: Path) -> None:
    vault = SecretVault(tmp_path / "secrets.sqlite3")
    alices = HANDLE.fullmatch(vault.handle(GHP, "github-token", "alice", "s"))
    bobs = HANDLE.fullmatch(vault.handle(GHP, "github-token", "bob", "s"))
    assert alices is not None
    assert bobs is not None
    assert alices["id"] != bobs["id"]
    assert vault.reveal(alices["id"], "bob") is None
    assert vault.reveal(alices["id"], "") is None
    assert vault.reveal(bobs["id"], "bob") == Secret(GHP, frozenset({"s"}))


def test_handles_outlive_the_process(tmp_path: Path) -> None:
    path = tmp_path / "secrets.sqlite3"
    vault = SecretVault(path)
    handle = vault.handle(GHP, "github-token", "", "s")
    vault.close()
    again = SecretVault(path)
    assert again.handle(GHP, "github-token", "", "s") == handle
    match = HANDLE.fullmatch(handle)
    assert match is not None
    assert again.reveal(match["id"], "") == Secret(GHP, frozenset({"s"}))


def test_a_handle_remembers_every_server_whose_output_held_its_value(tmp_path: Path) -> None:
    vault = SecretVault(tmp_path / "secrets.sqlite3")
    first = vault.handle(GHP, "github-token", "alice", "vault")
    assert vault.handle(GHP, "github-token", "alice", "github") == first  # one handle, two producers
    match = HANDLE.fullmatch(first)
    assert match is not None
    assert vault.reveal(match["id"], "alice") == Secret(GHP, frozenset({"vault", "github"}))
