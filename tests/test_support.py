"""The test harness itself: a CI run never passes by skipping what it could not install."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import require_installed


def test_missing_npm_packages_skip_locally_and_fail_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = [tmp_path / "node_modules" / "peer.js"]
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="npm ci"):
        require_installed(missing, "npm ci --prefix tests/peers")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="missing in CI"):
        require_installed(missing, "npm ci --prefix tests/peers")
    (tmp_path / "node_modules").mkdir()
    missing[0].write_text("")
    require_installed(missing, "npm ci --prefix tests/peers")  # installed: runs, in CI or not
