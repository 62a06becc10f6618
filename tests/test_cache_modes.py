"""offprompt's cache directory holds the tool lists of the user's servers: it is the user's alone (0700), as
it is made, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from offprompt.cache_dir import CACHE_ENV
from offprompt.proxy.list_cache import CachedLists, ListCache
from offprompt.serve.prelude import FrontCache
from offprompt.tokens import seed_tiktoken_cache


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user cache directory (platformdirs reads XDG_CACHE_HOME), under the usual umask 022."""
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    umask = os.umask(0o022)
    try:
        yield tmp_path / "cache"
    finally:
        os.umask(umask)


def _modes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root.parent)): oct(stat.S_IMODE(p.stat().st_mode)) for p in [root, *root.rglob("*")]}


def test_the_lists_cache_is_private_from_the_cache_root_down(user_cache: Path) -> None:
    ListCache.default().save("server", CachedLists(tools=[]))
    modes = _modes(user_cache / "offprompt")
    assert "offprompt/lists/server.json" in modes
    assert modes == {name: "0o600" if name.endswith(".json") else "0o700" for name in modes}


def test_the_front_cache_is_private_from_the_cache_root_down(user_cache: Path) -> None:
    front = FrontCache.for_config(None)
    assert front is not None
    front.save({"tools/list": {"variants": [], "versions": {}}})
    modes = _modes(user_cache / "offprompt")
    assert modes == {name: "0o600" if name.endswith(".json") else "0o700" for name in modes}


def test_the_encodings_cache_makes_the_cache_root_private(user_cache: Path) -> None:
    seed_tiktoken_cache()
    assert _modes(user_cache / "offprompt")["offprompt"] == "0o700"
    assert _modes(user_cache / "offprompt")["offprompt/tiktoken"] == "0o700"
