"""The official MCP conformance suite against `offprompt serve --transport http`, at both protocol versions.

Every scenario of the suite runs (`--suite all`). The known failures are listed, each with its reason, in
`baseline-{version}.yml`; the suite fails the run on a failure not listed there, and on a listed scenario
that passes, so the baseline can only shrink.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..serving import CONFORMANCE_CLI, NODE, clean_env, needs_conformance, offprompt_serving

pytestmark = needs_conformance

HERE = Path(__file__).parent
VERSIONS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with offprompt_serving(tmp_path_factory.mktemp("conformance"), "--transport", "http") as served:
        yield served.url


@pytest.mark.parametrize("version", VERSIONS)
def test_the_conformance_suite_finds_only_the_known_failures(url: str, version: str, tmp_path: Path) -> None:
    baseline = HERE / f"baseline-{version}.yml"
    command = [str(NODE), str(CONFORMANCE_CLI), "server", "--url", url, "--suite", "all", "--spec-version", version]
    command += ["--expected-failures", str(baseline), "--output-dir", str(tmp_path / "results")]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=clean_env(), check=False
    )
    report = done.stdout[done.stdout.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in done.stdout else done.stdout
    assert done.returncode == 0, f"conformance at {version} (baseline {baseline.name}):\n{report}\n{done.stderr}"
    passed = re.search(r"Total: (\d+) passed", done.stdout)
    assert passed, f"no summary from the conformance suite at {version}:\n{done.stdout[-2000:]}\n{done.stderr}"
    assert int(passed[1]) > 0, f"the conformance suite passed no scenario at {version} (did it reach the server?)"
