"""The exceptions table: every row ends the false alarm it names and keeps the secret of the same shape it names;
a config's `secrets_allowlist` row ends what it matches, and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as mt
import pytest

from offprompt.secrets import find_secrets
from offprompt.secrets.exceptions import ROWS, Row, set_user_rows, user_rows
from tests.serve.test_fastlane import offprompt
from tests.support import REPO

COUNTER = str(REPO / "tests" / "servers" / "counter.py")


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_row_ends_its_false_alarm(row: Row) -> None:
    assert find_secrets(row.ends) == []


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_row_keeps_a_secret_of_the_same_shape(row: Row) -> None:
    assert len(find_secrets(row.keeps)) == 1


def test_a_users_row_ends_what_it_matches_only() -> None:
    text = "STAGING_DB_PASSWORD=team-shared-Kx81\n"
    assert [f.value for f in find_secrets(text)] == ["team-shared-Kx81"]
    before = user_rows()
    set_user_rows([Row("staging", r"team-shared-\w+", key=r"^STAGING_")])
    try:
        assert find_secrets(text) == []
        assert [f.value for f in find_secrets("PROD_DB_PASSWORD=team-shared-Kx81\n")] == ["team-shared-Kx81"]
    finally:
        set_user_rows(before)


@pytest.mark.anyio
async def test_a_configs_allowlist_row_lets_its_value_through_a_real_server(tmp_path: Path) -> None:
    allow = {"id": "staging", "value": "team-shared-\\w+", "key": "^STAGING_", "reason": "a shared staging login"}
    config = {
        "offprompt": {"secrets_allowlist": [allow]},
        "mcpServers": {"notes": {"command": sys.executable, "args": [COUNTER]}},
    }
    text = "STAGING_DB_PASSWORD=team-shared-Kx81\nPROD_DB_PASSWORD=team-shared-Kx81\n"
    async with offprompt(tmp_path, config) as client:
        result = await client.call_tool("notes__echo", {"text": text})
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    assert block.text.startswith("STAGING_DB_PASSWORD=team-shared-Kx81\nPROD_DB_PASSWORD=⟦secret:")
