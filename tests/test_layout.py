"""The package's shape: a light root, and the SDK's server kept out of the layers below serving."""

from __future__ import annotations

import ast
import subprocess
import sys

from .support import REPO

PACKAGE = REPO / "server" / "offprompt"
BELOW_SERVING = (
    "results.py",
    "proxy",
    "tools.py",
    "policy.py",
    "memory",
    "config",
    "artifacts.py",
    "tokens.py",
    "embedding.py",
    "secrets",
    "jsonrpc.py",
)


def _imports(path: str) -> set[str]:
    tree = ast.parse((PACKAGE / path).read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return names


def test_nothing_below_serving_imports_the_sdk_server() -> None:
    offenders = []
    for entry in BELOW_SERVING:
        paths = [PACKAGE / entry] if entry.endswith(".py") else sorted((PACKAGE / entry).rglob("*.py"))
        for path in paths:
            relative = str(path.relative_to(PACKAGE))
            offenders += [f"{relative}: {name}" for name in _imports(relative) if name.startswith("mcp.server")]
    assert offenders == []


def test_importing_errors_loads_no_other_offprompt_module() -> None:
    code = "import sys, offprompt.errors; print(sorted(m for m in sys.modules if m.startswith('offprompt')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['offprompt', 'offprompt._version', 'offprompt.errors']"


#: The one module that may read the SDK past its public API (it says which SDK version needs it, and why).
SDK_ADAPTER = "serve/sdk_adapter.py"


def _private_sdk_uses(path: str) -> list[str]:
    """A private SDK module imported (`mcp.shared._x`), or a private SDK attribute read (`_connection`)."""
    tree = ast.parse((PACKAGE / path).read_text())
    modules = _imports(path)
    uses = [m for m in modules if m.split(".")[0] == "mcp" and any(p.startswith("_") for p in m.split(".")[1:])]
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return uses + sorted(names & {"_connection"})


def test_only_the_adapter_reads_the_sdk_past_its_public_api() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        uses = _private_sdk_uses(relative)
        if uses and relative != SDK_ADAPTER:
            offenders[relative] = uses
    assert offenders == {}
    assert _private_sdk_uses(SDK_ADAPTER)  # else the adapter can go


def test_no_module_imports_another_modules_private_names() -> None:
    """A backend is a peer, not a borrower: what two modules share is public in one of them (the PostgreSQL
    storages once took the files storage's `_Job`, `_hint`, `_Candidate` and the lexical index's `_WORD`)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("offprompt"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                offenders += [f"{path.relative_to(PACKAGE)}: {node.module}.{name}" for name in private]
    assert offenders == []


def test_the_postgresql_backend_subclasses_nothing_of_the_files_backend() -> None:
    """Backends are peers: the PostgreSQL classes implement the storage and catalog protocols and compose what
    both backends share (`local_texts`, `text_query`, `indexing`), so a change to the files backend cannot
    silently change the shared memory (the text storage and the catalog once were subclasses)."""
    modules = [*sorted((PACKAGE / "memory" / "storage").glob("pg*.py")), PACKAGE / "memory" / "pgcatalog.py"]
    assert len(modules) >= 6
    subclasses = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.bases:
                subclasses += [f"{path.name}: {node.name}({ast.unparse(base)})" for base in node.bases]
    assert subclasses == []
    imported = set().union(*(_imports(str(path.relative_to(PACKAGE))) for path in modules))
    assert "offprompt.memory.storage.text" not in imported
