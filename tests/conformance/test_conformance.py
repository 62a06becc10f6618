"""The official MCP conformance suite against `offprompt serve --transport http`, at both protocol versions.

Every scenario of the suite runs (`--suite all`). The known failures are listed, each with its reason, in
`baseline-{version}.yml`; the suite fails the run on a failure not listed there, and on a listed scenario
that passes, so the baseline can only shrink.

Through the proxy: the suite runs against server-everything directly, then against offprompt with
server-everything behind it (`"prefix": false`, so the scenarios find its names); every scenario that passes
directly must pass through offprompt, but those listed in `baseline-through-proxy.yml` with their reasons.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..serving import (
    CONFORMANCE_CLI,
    NODE,
    PEERS,
    clean_env,
    everything_serving,
    needs_conformance,
    offprompt_serving,
)

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


def passed_scenarios(url: str, version: str, out: Path) -> set[str]:
    """The scenarios the suite passes against `url` at `version` (every check of each passed)."""
    command = [str(NODE), str(CONFORMANCE_CLI), "server", "--url", url, "--suite", "all", "--spec-version", version]
    done = subprocess.run(
        [*command, "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=out.parent,
        env=clean_env(),
        check=False,
    )
    assert "=== SUMMARY ===" in done.stdout, f"no summary from the conformance suite at {version}:\n{done.stderr}"
    summary = done.stdout[done.stdout.find("=== SUMMARY ===") :]
    return set(re.findall(r"^✓ (\S+):", summary, re.MULTILINE))


def through_proxy_baseline() -> dict[str, set[str]]:
    """`baseline-through-proxy.yml`: per version, its `  - scenario` lines (a flat YAML, read without a library)."""
    found: dict[str, set[str]] = {}
    version = ""
    for line in (HERE / "baseline-through-proxy.yml").read_text().splitlines():
        if match := re.match(r"^(\d{4}-\d{2}-\d{2}):", line):
            version = match[1]
            found[version] = set()
        elif match := re.match(r"^\s+- (\S+)", line):
            found[version].add(match[1])
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_through_the_proxy_every_scenario_the_downstream_passes_passes(version: str, tmp_path: Path) -> None:
    with everything_serving() as everything:
        direct = passed_scenarios(everything.url, version, tmp_path / "direct")
    assert direct, f"server-everything passed no scenario at {version} (did the suite reach it?)"
    script = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    config = tmp_path / "offprompt.json"
    server = {"command": str(NODE), "args": [str(script), "stdio"], "prefix": False}
    config.write_text(json.dumps({"mcpServers": {"everything": server}}))
    with offprompt_serving(tmp_path / "data", "--transport", "http", "--config", str(config)) as served:
        through = passed_scenarios(served.url, version, tmp_path / "through")
    lost = direct - through
    expected = through_proxy_baseline()[version]
    assert lost - expected == set(), f"pass against server-everything directly, fail through offprompt at {version}"
    assert expected - lost == set(), (
        f"listed in baseline-through-proxy.yml at {version} but no longer lost through offprompt: delete the lines"
    )
