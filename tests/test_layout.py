"""The package's shape: a light root, and the SDK's server kept out of the layers below serving."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from .support import REPO

PACKAGE = REPO / "server" / "offprompt"
BELOW_SERVING = (
    "results.py",
    "proxy",
    "tools.py",
    "tool_args.py",
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


# --- the module map and the arrows of docs/dev/architecture.md ---------------------------------------------

ARCHITECTURE = REPO / "docs" / "dev" / "architecture.md"
PYPROJECT = REPO / "pyproject.toml"
ROW = re.compile(r"^\| `(?P<key>[^`]+)` \|(?P<owns>.*)\|\s*$", re.M)
ARROW = re.compile(r"`(?P<container>offprompt[\w.]*): (?P<arrow>[^`]*→[^`]*)`")


def map_rows() -> dict[str, str]:
    """The module map's rows: a module (`serve/http.py`) or a package (`memory/storage/`) → what it owns."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    return {m["key"]: m["owns"] for m in ROW.finditer(section)}


def _defines_anything(path: Path) -> bool:
    """A package's `__init__.py` with a function or class is a module of its own; one that only re-exports isn't."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in ast.walk(tree))


def on_the_map(module: str, rows: dict[str, str]) -> bool:
    """A module is on the map by a row of its own, or named (`files.py`, `storage/pg.py`) in the row of a
    package it is in; a package's `__init__.py` by the package's row."""
    if module.endswith("/__init__.py"):
        module = module.removesuffix("__init__.py")
    if module in rows:
        return True
    parts = module.rstrip("/").split("/")
    for depth in range(len(parts) - 1, 0, -1):
        package, rest = "/".join(parts[:depth]) + "/", "/".join(parts[depth:])
        rest += "/" if module.endswith("/") else ""
        if package in rows and f"`{rest}`" in rows[package]:
            return True
    return False


def modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        if relative == "__init__.py":  # the package's root: the whole map is its
            continue
        if path.name == "__init__.py" and not _defines_anything(path):
            continue
        found.append(relative)
    return found


def test_every_module_is_on_the_map() -> None:
    """docs/dev/architecture.md's module map names every module of server/offprompt/: a row of its own, or its
    file named in its package's row. A new module adds its row (one line)."""
    rows = map_rows()
    missing = [module for module in modules() if not on_the_map(module, rows)]
    assert missing == [], f"not in the module map of {ARCHITECTURE.relative_to(REPO)}: {', '.join(missing)}"


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = [key for key in map_rows() if not (PACKAGE / key).exists()]
    assert gone == [], f"the module map of {ARCHITECTURE.relative_to(REPO)} names what is gone: {', '.join(gone)}"


def contracts() -> dict[str, list[set[str]]]:
    """The layers contracts of pyproject.toml: the container (`offprompt`, `offprompt.memory`) → its layers,
    top first, each a set of names."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    found = {}
    for contract in config["contracts"]:
        if contract["type"] != "layers":
            continue
        containers = contract.get("containers", [config["root_package"]])
        for container in containers:
            layers = [
                {name.strip().removeprefix(f"{container}.") for name in layer.split("|")}
                for layer in contract["layers"]
            ]
            found[container] = layers
    return found


def arrows() -> dict[str, list[set[str]]]:
    """The arrows of the page's "How it is built", `offprompt: a → (b, c) → d`: container → layers, top first."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## How it is built", 1)[1].split("\n## ", 1)[0]
    found = {}
    for m in ARROW.finditer(" ".join(section.split())):
        layers = [step.strip().strip("()") for step in m["arrow"].split("→")]
        found[m["container"]] = [{name.strip() for name in layer.split(",")} for layer in layers]
    return found


def test_the_arrows_of_the_page_are_the_import_contracts() -> None:
    """The page's arrows say which way imports point; `lint-imports` checks the contracts in pyproject.toml.
    They are one: a layer moved in one and not the other fails here (secrets once sat above memory on the page
    while the contracts had it at the bottom)."""
    page, linted = arrows(), contracts()
    assert sorted(page) == sorted(linted), f"{ARCHITECTURE.relative_to(REPO)} draws no arrow for some contract"
    for container, layers in linted.items():
        assert page[container] == layers, f"the arrow of {container} differs from its contract in pyproject.toml"


def test_every_top_level_module_has_a_layer() -> None:
    """A module in no layer is checked by no contract: every module and package of the root is in one."""
    layered = set().union(*contracts()["offprompt"])
    top = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()}
    top = {name for name in top if (PACKAGE / name).is_dir() and name not in {"data", "__pycache__"}}
    top |= {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert sorted(top - layered) == []
