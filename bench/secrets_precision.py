"""False alarms of the secret detector on real code nobody tuned it on: handles per MB, and every hit listed.

    .venv/bin/python -m bench.secrets_precision [--part tuned|tuned-2|…|tuned-11|held-out-10|all]
        [--show N] [--out F] [--listing F] [--judge]

The corpus is code and docs already on the machine. A finding is a false alarm unless a reader judged it a
live-looking key (`LIVE_LOOKING`: a real key the code ships, or a fixture no rule could tell from one); the
listing shows every hit, with its line. Twenty parts, each fixed before the rules were changed against it:

- tuned: the Python standard library's top-level modules and packages `a`-`m` (site-packages left out);
- tuned-2: the standard library `n`-`z`, Node's bundled API docs (`/usr/share/doc/nodejs/api`), npm's own
  JavaScript (`/usr/lib/node_modules/npm/lib`) and the installed sources of five libraries offprompt uses.
  It was the held-out part of the first round; its hits were read, so it is now fitted on too;
- tuned-3 and held-out-2, split before the second round's changes, by a rule: every other distribution of the
  environment (offprompt and tuned-2's five aside) and every package of `tests/peers/node_modules`, by the
  parity of the SHA-256 of its name (even: tuned-3, odd: held-out-2). held-out-2 was the second round's held-out
  part; its hits were read, so from the third round on it is fitted on too;
- tuned-4 and held-out-3, split before the third round's changes by the same rule (even: tuned-4, odd:
  held-out-3), from sources no earlier part holds: the distributions of the interpreter's own site-packages
  (which the environment does not see) and of Debian's `/usr/lib/python3/dist-packages`, the packages of
  `tests/conformance/node_modules`, of npm's own `node_modules` and corepack, and the text files of each
  directory of `/usr/share/doc` (nodejs's aside). A distribution or package whose name an earlier part or an
  earlier source already holds is left out, whatever its version. held-out-3 was the third round's held-out part;
  its hits were read, so from the fourth round on it is fitted on too;
- tuned-5 and held-out-4, split before the fourth round's changes by the same rule (even: tuned-5, odd:
  held-out-4), from sources no earlier part holds: the distributions of fast-agent's environment
  (`.venv-fast-agent`), those that came into the sources of the second and third splits after them (the bench's
  extras in offprompt's environment, Debian's packages and docs), the site-packages of pyenv's other interpreters,
  and the Google Cloud SDK (`/usr/lib/google-cloud-sdk`): its own code cut into packages, API clients and command
  groups, its tools under `platform`, and each library it vendors. A name an earlier part holds (as a distribution,
  a package, a top-level package of one, or a module of the standard library) is left out, whatever its version,
  and so is one an earlier source of the split took. held-out-4 was the fourth round's held-out part; its hits
  were read, so from the fifth round on it is fitted on too;
- tuned-6 and held-out-5, split before the fifth round's changes by the same rule (even: tuned-6, odd:
  held-out-5), from a source no earlier part holds: the wheels of PyPI projects under `/opt/pypi` and
  `/opt/pypi-more`, each project at its newest version there, its text members read inside the archive. A name an
  earlier part holds (as the fourth split reads it, or a unit of the fourth split and the names it goes by) is
  left out, whatever its version, and so is a project one of whose regular top-level packages is held (a
  namespace package such as `google` names none). In the order of the SHA-256 of their names, each part takes every
  unit of its parity that keeps its text within 120 MB. held-out-5 was the fifth round's held-out part; its hits
  were read, so from the sixth round on it is fitted on too;
- tuned-7 and held-out-6, split before the sixth round's changes by the same rule (even: tuned-7, odd:
  held-out-6), from the fifth split's projects neither of its parts took (the cap left them out): no name of them
  is held by an earlier part, as the fifth split takes each name once. In the order of the SHA-256 of their names,
  each part takes every unit of its parity that keeps its text within 120 MB. held-out-6 was the sixth round's
  held-out part; its hits were read, so from the seventh round on it is fitted on too;
- tuned-8 and held-out-7, split before the seventh round's changes by the same rule (even: tuned-8, odd:
  held-out-7), from the fifth split's projects none of the fifth's and sixth's parts took (the cap left them out
  again); as for the sixth split, no name of them is held by an earlier part. In the order of the SHA-256 of their
  names, each part takes every unit of its parity that keeps its text within 120 MB. held-out-7 was the seventh
  round's held-out part; its hits were read, so from the eighth round on it is fitted on too;
- tuned-9 and held-out-8, split before the eighth round's changes by the same rule (even: tuned-9, odd:
  held-out-8), from a source of no earlier part, and in other languages than theirs: Perl's library, Vim's
  runtime, CMake's modules and help, Tcl/Tk's, PostgreSQL's shared SQL and the Rust toolchain's HTML docs, read as
  the text a page shows (`bench/secrets_languages.py`). In the order of the SHA-256 of their names, each part takes
  every unit of its parity that keeps its files within 120 MB. held-out-8 was the eighth round's held-out part;
  its hits were read, so from the ninth round on it is fitted on too;
- tuned-10 and held-out-9, split before the ninth round's changes by the same rule (even: tuned-10, odd:
  held-out-9), from a source of no earlier part: the machine's English manual pages, each read as the words `man`
  shows (`bench/secrets_manuals.py`); each part takes every page of its parity. held-out-9 was the ninth round's
  held-out part; its hits were read, so from the tenth round on it is fitted on too;
- tuned-11 and held-out-10, split before the tenth round's changes by the same rule (even: tuned-11, odd:
  held-out-10), from the eighth split's units neither of its parts took (the cap left them out: most of the Rust
  toolchain's API references). In the order of the SHA-256 of their names, each part takes every unit of its
  parity that keeps its files within 120 MB. held-out-10 only reports.

The versions are pinned in `bench/secrets_precision_pins.json` (Python, Node, each distribution and package,
the hashes of the package-lock files, for a doc directory, which has no version, the SHA-256 of its files, for the
Cloud SDK's units the SDK's version, for a wheel its project's) and checked, so a run on other versions or on a
machine without a source says so instead of comparing unlike with unlike. A pinned part holds the units its pins
name and no other: what is installed after its split is not measured with it. None of it is needed by the tests,
which CI runs; the bench is not. Writes the parts it ran into `bench/results/secrets-precision.json` (their
figures) and `bench/listings/secrets-precision.json` (every hit, git-ignored), keeping the others.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import platform
import re
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from packaging.version import Version

from bench import secrets_languages as languages
from bench import secrets_manuals as manuals
from bench.report import invocation, load_average, stamp
from offprompt.secrets import find_secrets

RESULTS = Path(__file__).parent / "results" / "secrets-precision.json"
#: Every hit with its file, line and context: what a reader judges and `--judge` re-reads; never committed.
LISTING = Path(__file__).parent / "listings" / "secrets-precision.json"
PINS = Path(__file__).parent / "secrets_precision_pins.json"
REPO = Path(__file__).resolve().parent.parent
SUFFIXES = {".py", ".md", ".js", ".mjs", ".cjs", ".json", ".txt", ".rst", ".cfg", ".toml", ".ini"}
STDLIB = Path(sysconfig.get_paths()["stdlib"])
SITE = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])}
LIBRARIES = ("pydantic", "starlette", "httpx", "anyio", "mcp")
NODE_MODULES = Path("tests/peers/node_modules")  # relative to the repository, so hits name it the same anywhere
LOCK = Path("tests/peers/package-lock.json")


def _stdlib(first: str, last: str) -> list[Path]:
    return sorted(p for p in STDLIB.iterdir() if p.name != "site-packages" and first <= p.name[:1].lower() <= last)


def _library(name: str) -> Path:
    files = importlib.metadata.files(name) or []
    top = next(f for f in files if f.name == "__init__.py" and len(f.parts) == 2)
    return Path(str(top.locate())).parent


def _parity(name: str) -> int:
    """0 or 1, fixed by the name alone: which of tuned-3 and held-out-2 a distribution or package is in."""
    return int(hashlib.sha256(name.lower().encode()).hexdigest(), 16) % 2


def _distributions() -> dict[str, importlib.metadata.Distribution]:
    """The environment's distributions, by name, but offprompt itself and tuned-2's libraries."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name.lower() not in {"offprompt", *LIBRARIES}:
            found.setdefault(name, dist)
    return dict(sorted(found.items()))


def _dist_files(dist: importlib.metadata.Distribution) -> list[Path]:
    """A distribution's installed sources and docs (its metadata and anything outside site-packages aside)."""
    paths = (Path(str(f.locate())) for f in dist.files or [] if ".dist-info" not in str(f))
    return sorted(p for p in paths if p.suffix in SUFFIXES and any(site in p.parents for site in SITE))


def _packages() -> list[str]:
    """The top-level packages of tests/peers/node_modules."""
    return _top_packages(REPO / NODE_MODULES)


@cache
def _pins() -> dict[str, Any]:
    return dict(json.loads(PINS.read_text())) if PINS.exists() else {}


def _pinned(part: str) -> set[str] | None:
    """The names a part was fixed with, or None before it is pinned: what is installed after a part's split is not
    in it (the bench's extras came into the environment after the second split, Debian packages after the third)."""
    sources = _pins().get(part)
    return None if sources is None else {name for source in sources.values() for name in source}


def _in_part(part: str, name: str) -> bool:
    pinned = _pinned(part)
    return pinned is None or name in pinned


def _second(part: str, parity: int) -> tuple[dict[str, importlib.metadata.Distribution], list[str]]:
    """tuned-3 (even) or held-out-2 (odd): its distributions, by name, and its packages."""
    dists = {name: d for name, d in _distributions().items() if _parity(name) == parity and _in_part(part, name)}
    return dists, [name for name in _packages() if _parity(name) == parity and _in_part(part, name)]


def _split(part: str, parity: int) -> list[Path]:
    dists, packages = _second(part, parity)
    return [p for dist in dists.values() for p in _dist_files(dist)] + [REPO / NODE_MODULES / n for n in packages]


#: The third split's sources, none in an earlier part: the interpreter's own site-packages (the venv does not see
#: it) and Debian's, the conformance suite's node_modules, npm's own dependencies and corepack, and the text of
#: Debian's package docs. A distribution or package of a name an earlier part holds (at any depth of
#: tests/peers/node_modules) is left out, whatever its version.
INTERPRETER_SITE = STDLIB / "site-packages"
DEBIAN_SITE = Path("/usr/lib/python3/dist-packages")
CONFORMANCE = Path("tests/conformance/node_modules")  # relative to the repository, as NODE_MODULES
CONFORMANCE_LOCK = Path("tests/conformance/package-lock.json")
NPM_MODULES = Path("/usr/lib/node_modules/npm/node_modules")
GLOBAL_MODULES = Path("/usr/lib/node_modules")  # corepack; npm itself is tuned-2's (lib) and NPM_MODULES'
DOCS = Path("/usr/share/doc")  # nodejs's is tuned-2's


@dataclass(frozen=True, slots=True)
class _Unit:
    """One distribution, package or doc directory of the third and fourth splits, by the name the split reads."""

    source: str  # "python", "node_modules" or "docs": the pins file's key
    name: str
    version: str  # a doc directory has none: the SHA-256 of its files instead
    roots: tuple[Path, ...]
    provides: tuple[str, ...] = ()  # other names it goes by: a distribution's top-level packages


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _site_files(dist: importlib.metadata.Distribution, site: Path) -> list[Path]:
    """A distribution's sources and docs under `site`: from its RECORD, or, for an egg-info without one
    (Debian's), its top-level packages (a namespace package's own part only: `lazr/uri` of lazr.uri)."""
    if dist.files is not None:
        paths = (Path(str(f.locate())) for f in dist.files if ".dist-info" not in str(f))
        return sorted(p for p in paths if p.suffix in SUFFIXES and site in p.parents)
    if dist.read_text("namespace_packages.txt"):
        tops = [dist.metadata["Name"].replace(".", "/")]
    else:
        tops = (dist.read_text("top_level.txt") or "").split()
    roots = [root for top in tops for root in (site / top, site / f"{top}.py") if root.exists()]
    return _files(roots)


def _second_names() -> set[str]:
    """The environment's distributions as the second split found them (canonical): the pinned ones, not those
    installed since."""
    pinned = [_pinned(part) for part in ("tuned-3", "held-out-2")]
    if any(names is None for names in pinned):
        return {_canonical(dist.metadata["Name"]) for dist in importlib.metadata.distributions()}
    return {_canonical(name) for names in pinned for name in names or ()} | {"offprompt", *LIBRARIES}


def _python_units() -> list[_Unit]:
    seen = _second_names()
    units: list[_Unit] = []
    for site in (INTERPRETER_SITE, DEBIAN_SITE):
        if not site.is_dir():
            continue
        for dist in sorted(importlib.metadata.distributions(path=[str(site)]), key=lambda d: d.metadata["Name"]):
            name = dist.metadata["Name"]
            if _canonical(name) in seen:
                continue
            seen.add(_canonical(name))
            units.append(_Unit("python", name, dist.version, tuple(_site_files(dist, site))))
    return units


def _top_packages(root: Path) -> list[str]:
    """The top-level packages of a node_modules directory (`@scope/name` counts as one)."""
    if not root.is_dir():
        return []
    names: list[str] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("@"):
            names += [f"{entry.name}/{scoped.name}" for scoped in sorted(entry.iterdir())]
        elif not entry.name.startswith("."):
            names.append(entry.name)
    return names


def _every_package(root: Path) -> set[str]:
    """Every package name of a node_modules tree, nested ones too."""
    names = set(_top_packages(root))
    for nested in root.rglob("node_modules") if root.is_dir() else ():
        names.update(_top_packages(nested))
    return names


def _node_units() -> list[_Unit]:
    seen = _every_package(REPO / NODE_MODULES)
    units: list[_Unit] = []
    for root, names in (
        (REPO / CONFORMANCE, _top_packages(REPO / CONFORMANCE)),
        (NPM_MODULES, _top_packages(NPM_MODULES)),
        (GLOBAL_MODULES, [name for name in _top_packages(GLOBAL_MODULES) if name != "npm"]),
    ):
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            version = str(json.loads((root / name / "package.json").read_text()).get("version", ""))
            units.append(_Unit("node_modules", name, version, (root / name,)))
    return units


def _doc_units() -> list[_Unit]:
    units: list[_Unit] = []
    for entry in sorted(DOCS.iterdir()) if DOCS.is_dir() else ():
        if entry.name == "nodejs" or entry.is_symlink() or not entry.is_dir():
            continue
        if files := [path for path in _files([entry]) if not path.is_symlink()]:  # a link's target is its own
            digest = hashlib.sha256()
            for path in files:
                digest.update(f"{path.relative_to(entry)}\0".encode() + path.read_bytes() + b"\0")
            units.append(_Unit("docs", entry.name, f"sha256:{digest.hexdigest()[:16]}", tuple(files)))
    return units


@cache
def _third_units() -> tuple[_Unit, ...]:
    return (*_python_units(), *_node_units(), *_doc_units())


def _third(part: str, parity: int) -> list[_Unit]:
    """tuned-4 (even) or held-out-3 (odd): the third split's units by the parity of the SHA-256 of their name."""
    return [unit for unit in _third_units() if _parity(unit.name) == parity and _in_part(part, unit.name)]


#: The fourth split's sources, none in an earlier part: the distributions of fast-agent's environment
#: (`.venv-fast-agent`, the real-client tests'), what came into the earlier sources after their split (the bench's
#: extras in offprompt's environment, Debian's packages and docs), the site-packages of pyenv's other interpreters
#: (their standard libraries have tuned's names) and the Google Cloud SDK: its own code, cut into packages and
#: command groups, and the libraries it vendors, each by its name. A name an earlier part holds (a distribution, a
#: package, a top-level package of one of its distributions, a module of the standard library) is left out, whatever
#: its version, and so is a name an earlier source of this split took.
FAST_AGENT = Path(".venv-fast-agent")  # relative to the repository, as NODE_MODULES
PYENV = Path(sys.base_prefix).parent  # pyenv's `versions`, when the interpreter is pyenv's
CLOUD_SDK = Path("/usr/lib/google-cloud-sdk")
#: The SDK's directories cut into their subdirectories, their own files one unit more: whole, `generated_clients`
#: alone (98 MB of text) would be most of a part.
SDK_CUT = frozenset(
    {
        ".", "lib", "lib/googlecloudsdk", "lib/googlecloudsdk/api_lib", "lib/googlecloudsdk/command_lib",
        "lib/googlecloudsdk/generated_clients", "lib/googlecloudsdk/generated_clients/apis",
        "lib/googlecloudsdk/generated_clients/gapic_clients", "lib/googlecloudsdk/generated_clients/gapic_wrappers",
        "lib/surface", "platform",
    }
)  # fmt: skip
#: The SDK's directories of vendored libraries, each entry one library; the bundled interpreter, whose site-packages'
#: distributions are units (its standard library has tuned's names).
SDK_VENDORED = frozenset(
    {"lib/third_party", "platform/gsutil/third_party", "platform/bq/third_party", "platform/google_appengine/lib"}
)
SDK_PYTHON = "platform/bundledpythonunix"
#: A vendored source checkout's directories that are no package of it.
_NOT_PACKAGES = frozenset({"test", "tests", "doc", "docs", "example", "examples", "samples", "tools", "bin", "scripts"})
_NOT_MODULES = frozenset({"setup", "ez_setup", "conftest", "noxfile", "nox"})


def _sites(prefix: Path) -> list[Path]:
    """The site-packages of an environment or an interpreter."""
    return sorted(prefix.glob("lib/python*/site-packages"))


def _pyenv_sites() -> list[Path]:
    """The site-packages of pyenv's interpreters but the bench's own (the third split's)."""
    if PYENV.name != "versions" or not PYENV.is_dir():
        return []
    own = Path(sys.base_prefix).resolve()
    return [site for version in sorted(PYENV.iterdir()) if version.resolve() != own for site in _sites(version)]


def _top_level(dist: importlib.metadata.Distribution) -> tuple[str, ...]:
    """The top-level packages and modules a distribution installs (`dateutil` of python-dateutil)."""
    if listed := (dist.read_text("top_level.txt") or "").split():
        return tuple(listed)
    tops: set[str] = set()
    for file in dist.files or []:
        top = file.parts[0]
        if top in ("..", "__pycache__") or top.endswith((".dist-info", ".egg-info", ".data")):
            continue
        if len(file.parts) > 1 or top.endswith(".py"):
            tops.add(top.removesuffix(".py"))
    return tuple(sorted(tops))


def _held() -> set[str]:
    """Every name an earlier part holds, canonical: its distributions and packages, their top-level packages, and
    the modules of the standard library (tuned's and tuned-2's)."""
    names = {*sys.stdlib_module_names, "offprompt", *LIBRARIES}
    for part in ("tuned-3", "held-out-2", "tuned-4", "held-out-3"):
        names |= _pinned(part) or set()
    held = {_canonical(name) for name in names}
    elsewhere = (
        d for site in (INTERPRETER_SITE, DEBIAN_SITE) for d in importlib.metadata.distributions(path=[str(site)])
    )
    for dist in (*importlib.metadata.distributions(), *elsewhere):
        if _canonical(dist.metadata["Name"]) in held:
            held |= {_canonical(top) for top in _top_level(dist)}
    return held


def _site_units(site: Path) -> list[_Unit]:
    dists = sorted(importlib.metadata.distributions(path=[str(site)]), key=lambda d: d.metadata["Name"])
    return [_Unit("python", d.metadata["Name"], d.version, tuple(_site_files(d, site)), _top_level(d)) for d in dists]


def _since() -> list[_Unit]:
    """What came into the sources of the second and third splits after them: units no pin of theirs names."""
    pinned = _second_names()
    second = [
        _Unit("python", name, dist.version, tuple(_dist_files(dist)), _top_level(dist))
        for name, dist in _distributions().items()
        if _canonical(name) not in pinned
    ]
    third = {name for part in ("tuned-4", "held-out-3") for name in _pinned(part) or set()}
    return second + [unit for unit in _third_units() if unit.name not in third]


def _sdk_version() -> str:
    version = CLOUD_SDK / "VERSION"
    return version.read_text().strip() if version.is_file() else ""


def _sdk_units(directory: Path) -> Iterator[_Unit]:
    """The units of a directory of the SDK: a cut one's own files and its subdirectories' units, a vendored one's
    libraries, the bundled interpreter's distributions, or else the directory whole, its vendored libraries apart."""
    at = directory.relative_to(CLOUD_SDK).as_posix()
    if at == SDK_PYTHON:
        yield from (unit for site in _sites(directory) for unit in _site_units(site))
    elif at in SDK_VENDORED:
        for entry in _sdk_entries(directory):
            if entry.is_dir():
                yield _Unit("google-cloud-sdk", entry.name, _sdk_version(), (entry,), _vendored_names(entry))
    elif at in SDK_CUT:
        entries = _sdk_entries(directory)
        if own := [entry for entry in entries if entry.is_file() and entry.suffix in SUFFIXES]:
            yield _Unit("google-cloud-sdk", at, _sdk_version(), tuple(own))
        for entry in entries:
            if entry.is_dir():
                yield from _sdk_units(entry)
    else:
        entries = sorted(directory.iterdir())
        vendored = [entry for entry in entries if entry.relative_to(CLOUD_SDK).as_posix() in SDK_VENDORED]
        roots = tuple(entry for entry in entries if entry not in vendored) if vendored else (directory,)
        yield _Unit("google-cloud-sdk", at, _sdk_version(), roots)
        for entry in vendored:
            yield from _sdk_units(entry)


def _sdk_entries(directory: Path) -> list[Path]:
    """A directory's entries but the installer's own (`.install`, its manifests) and the bytecode caches."""
    return sorted(
        entry for entry in directory.iterdir() if not entry.name.startswith(".") and entry.name != "__pycache__"
    )


def _vendored_names(entry: Path) -> tuple[str, ...]:
    """The names a vendored library goes by besides its directory's: for a source checkout (gsutil's
    `google-auth-library-python`), the project name its `setup.py` gives and its packages' and modules' names
    (`google`, a namespace package, has no `__init__.py`)."""
    if not any((entry / marker).is_file() for marker in ("setup.py", "setup.cfg", "pyproject.toml")):
        return ()
    setup = entry / "setup.py"
    declared = _DECLARED.findall(setup.read_text(errors="replace")) if setup.is_file() else []
    names: list[str] = declared[:1]
    for parent in (entry, entry / "src"):
        for sub in sorted(parent.iterdir()) if parent.is_dir() else ():
            if sub.is_dir() and sub.name.isidentifier() and sub.name not in _NOT_PACKAGES and _holds_python(sub):
                names.append(sub.name)
            elif sub.suffix == ".py" and sub.stem not in _NOT_MODULES:
                names.append(sub.stem)
    return tuple(names)


_DECLARED = re.compile(r"""\bname\s*=\s*["']([A-Za-z0-9_.-]+)["']""")


def _holds_python(directory: Path) -> bool:
    """A package, a namespace one too: a module in it or in a directory right under it."""
    return any(directory.glob("*.py")) or any(directory.glob("*/*.py"))


_VERSIONED = re.compile(r"[-_]\d+(?:[._]\d+)*$")  # `yaml-3.10`, `oauth2client_4_0`


@cache
def _fourth_units() -> tuple[_Unit, ...]:
    """The fourth split's units, in the order of its sources, each name taken once and none an earlier part holds."""
    held = _held()
    candidates = (
        *(unit for site in _sites(REPO / FAST_AGENT) for unit in _site_units(site)),
        *_since(),
        *(unit for site in _pyenv_sites() for unit in _site_units(site)),
        *(_sdk_units(CLOUD_SDK) if CLOUD_SDK.is_dir() else ()),
    )
    units: list[_Unit] = []
    for unit in candidates:
        names = {_canonical(name) for name in (unit.name, _VERSIONED.sub("", unit.name), *unit.provides)}
        if names & held or not _files(list(unit.roots)):
            continue
        held |= names
        units.append(unit)
    return tuple(units)


def _fourth(part: str, parity: int) -> list[_Unit]:
    """tuned-5 (even) or held-out-4 (odd): the fourth split's units by the parity of the SHA-256 of their name."""
    return [unit for unit in _fourth_units() if _parity(unit.name) == parity and _in_part(part, unit.name)]


#: The fifth split's source, none in an earlier part: the wheels of PyPI projects under `/opt/pypi` and
#: `/opt/pypi-more`, read inside the archive (nothing is extracted). A unit is one project at its newest version
#: there. A name an earlier part holds (as the fourth split reads it, and the fourth split's units and the names
#: they go by) is left out, whatever its version, and so is a project one of whose regular top-level packages is
#: held. In the order of the SHA-256 of their names, a part takes each of its parity's units that keeps its text
#: within `ARCHIVE_CAP`: the scan stays a few seconds, and which projects come in is the hash's choice.
ARCHIVES = (Path("/opt/pypi/files"), Path("/opt/pypi-more/files"))
ARCHIVE_CAP = 120_000_000  # bytes of text members


@dataclass(frozen=True, slots=True)
class _Wheel:
    """One project of the fifth split: its newest wheel and the text members read from it."""

    name: str  # canonical
    version: str
    path: Path
    members: tuple[str, ...]
    size: int  # the members' uncompressed bytes
    provides: tuple[str, ...]  # its regular top-level packages and modules


def _wheel_name(path: Path) -> tuple[str, str]:
    """A wheel's project (canonical) and version, from its file name (`name-version[-build]-py-abi-plat.whl`)."""
    name, version = path.name.split("-")[:2]
    return _canonical(name), version


def _newest_wheels() -> dict[str, Path]:
    """Each project's newest wheel under the archive directories, by name."""
    newest: dict[str, tuple[Version, Path]] = {}
    for directory in ARCHIVES:
        for path in sorted(directory.glob("*.whl")) if directory.is_dir() else ():
            name, version = _wheel_name(path)
            if name not in newest or Version(version) > newest[name][0]:
                newest[name] = (Version(version), path)
    return {name: path for name, (_, path) in sorted(newest.items())}


def _wheel(name: str, path: Path) -> _Wheel:
    with zipfile.ZipFile(path) as archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
    text = [info for info in infos if Path(info.filename).suffix in SUFFIXES and ".dist-info/" not in info.filename]
    return _Wheel(
        name,
        _wheel_name(path)[1],
        path,
        tuple(info.filename for info in text),
        sum(info.file_size for info in text),
        _wheel_tops([info.filename for info in infos]),
    )


def _wheel_tops(members: list[str]) -> tuple[str, ...]:
    """A wheel's regular top-level packages and modules: a namespace package (`google`, no `__init__.py`) is
    shared by projects, so it names none of them."""
    tops = {m.split("/")[0] for m in members if m.count("/") == 1 and m.endswith("/__init__.py")}
    tops |= {m.removesuffix(".py") for m in members if "/" not in m and m.endswith(".py")}
    return tuple(sorted(top for top in tops if top not in _NOT_PACKAGES and top not in _NOT_MODULES))


def _fifth_held() -> set[str]:
    """Every name an earlier part holds: the fourth split's and its units' (as they go by)."""
    held = _held()
    for part in ("tuned-5", "held-out-4"):
        held |= {_canonical(name) for name in _pinned(part) or set()}
    for unit in _fourth_units():
        held |= {_canonical(name) for name in (unit.name, _VERSIONED.sub("", unit.name), *unit.provides)}
    return held


@cache
def _fifth_units() -> tuple[_Wheel, ...]:
    """The fifth split's candidates: each project's newest wheel with text in it, none an earlier part holds, in
    the order of the SHA-256 of their names."""
    held = _fifth_held()
    units: list[_Wheel] = []
    for name, path in _newest_wheels().items():
        unit = _wheel(name, path)
        names = {name, *(_canonical(top) for top in unit.provides)}
        if names & held or not unit.members:
            continue
        held |= names
        units.append(unit)
    return tuple(sorted(units, key=lambda unit: hashlib.sha256(unit.name.encode()).hexdigest()))


def _fifth(part: str, parity: int) -> list[_Wheel]:
    """tuned-6 (even) or held-out-5 (odd): its parity's units in hash order, each that keeps the part within the
    cap; once pinned, the units its pins name."""
    if _pinned(part) is not None:
        return [unit for unit in _fifth_units() if _in_part(part, unit.name)]
    return _capped([unit for unit in _fifth_units() if _parity(unit.name) == parity])


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


_Unit_T = TypeVar("_Unit_T", bound=_Sized)


def _capped(units: list[_Unit_T]) -> list[_Unit_T]:
    """The units, in their order, each that keeps their text within `ARCHIVE_CAP`."""
    taken: list[_Unit_T] = []
    total = 0
    for unit in units:
        if total + unit.size > ARCHIVE_CAP:
            continue  # a smaller one after it may still fit
        taken.append(unit)
        total += unit.size
    return taken


#: The sixth split's source: the fifth's projects neither of its parts took (the cap left them out), by the same
#: rule. A project of the fifth split shares no name with another of it (each name is taken once), so none of these
#: is held by an earlier part.
def _sixth(part: str, parity: int) -> list[_Wheel]:
    """tuned-7 (even) or held-out-6 (odd): the fifth split's projects its parts did not take, its parity's in hash
    order, each that keeps the part within the cap; once pinned, the units its pins name."""
    return _left(part, parity, ("tuned-6", "held-out-5"))


#: The seventh split's source: the fifth's projects none of the fifth's and sixth's parts took (the cap left them
#: out again), by the same rule; as for the sixth, none is held by an earlier part.
def _seventh(part: str, parity: int) -> list[_Wheel]:
    """tuned-8 (even) or held-out-7 (odd): the fifth split's projects neither it nor the sixth took, its parity's
    in hash order, each that keeps the part within the cap; once pinned, the units its pins name."""
    return _left(part, parity, ("tuned-6", "held-out-5", "tuned-7", "held-out-6"))


def _left(part: str, parity: int, earlier: tuple[str, ...]) -> list[_Wheel]:
    """A part of the fifth split's projects the earlier parts did not take: once pinned, the units its pins name."""
    if _pinned(part) is not None:
        return [unit for unit in _fifth_units() if _in_part(part, unit.name)]
    taken = {name for other in earlier for name in _pinned(other) or set()}
    return _capped([unit for unit in _fifth_units() if unit.name not in taken and _parity(unit.name) == parity])


#: The eighth split's source: code and docs of other languages on the machine (`bench.secrets_languages`), by the
#: same rule: in the order of the SHA-256 of their names, each part takes every unit of its parity that keeps its
#: files within the cap.
def _eighth(part: str, parity: int) -> list[languages.Unit]:
    """tuned-9 (even) or held-out-8 (odd); once pinned, the units its pins name."""
    return _languages_left(part, parity, ())


#: The tenth split's source: the eighth's units neither of its parts took (the cap left them out), by the same rule.
def _tenth(part: str, parity: int) -> list[languages.Unit]:
    """tuned-11 (even) or held-out-10 (odd); once pinned, the units its pins name."""
    return _languages_left(part, parity, ("tuned-9", "held-out-8"))


def _languages_left(part: str, parity: int, earlier: tuple[str, ...]) -> list[languages.Unit]:
    """A part of the eighth split's units the earlier parts did not take, its parity's in hash order, each that
    keeps its files within the cap; once pinned, the units its pins name."""
    if _pinned(part) is not None:
        return [unit for unit in languages.units() if _in_part(part, unit.name)]
    taken_before = {name for other in earlier for name in _pinned(other) or set()}
    ordered = sorted(
        (unit for unit in languages.units() if unit.name not in taken_before and _parity(unit.name) == parity),
        key=lambda unit: hashlib.sha256(unit.name.encode()).hexdigest(),
    )
    return _capped(ordered)


#: The ninth split's source: the machine's English manual pages (`bench.secrets_manuals`), by the same rule; each
#: part takes every page of its parity (about 60 MB of text each).
def _ninth(part: str, parity: int) -> list[manuals.Page]:
    """tuned-10 (even) or held-out-9 (odd); once pinned, the pages its pins name."""
    if _pinned(part) is not None:
        return [page for page in manuals.pages() if _in_part(part, page.name)]
    return [page for page in manuals.pages() if _parity(page.name) == parity]


def _wheel_texts(units: list[_Wheel]) -> Iterator[tuple[str, bytes]]:
    """Each text member of the wheels, named `wheel/member`, read from the archive."""
    for unit in units:
        with zipfile.ZipFile(unit.path) as archive:
            for member in unit.members:
                yield f"{unit.path}/{member}", archive.read(member)


PARTS: dict[str, Callable[[], list[Path]]] = {
    "tuned": lambda: _stdlib("a", "m"),
    "tuned-2": lambda: [
        *_stdlib("n", "z"),
        Path("/usr/share/doc/nodejs/api"),
        Path("/usr/lib/node_modules/npm/lib"),
        *(_library(name) for name in LIBRARIES),
    ],
    "tuned-3": lambda: _split("tuned-3", 0),
    "held-out-2": lambda: _split("held-out-2", 1),
    "tuned-4": lambda: [root for unit in _third("tuned-4", 0) for root in unit.roots],
    "held-out-3": lambda: [root for unit in _third("held-out-3", 1) for root in unit.roots],
    "tuned-5": lambda: [root for unit in _fourth("tuned-5", 0) for root in unit.roots],
    "held-out-4": lambda: [root for unit in _fourth("held-out-4", 1) for root in unit.roots],
}
#: The parts read from archives, not from files on disk.
WHEEL_PARTS: dict[str, Callable[[], list[_Wheel]]] = {
    "tuned-6": lambda: _fifth("tuned-6", 0),
    "held-out-5": lambda: _fifth("held-out-5", 1),
    "tuned-7": lambda: _sixth("tuned-7", 0),
    "held-out-6": lambda: _sixth("held-out-6", 1),
    "tuned-8": lambda: _seventh("tuned-8", 0),
    "held-out-7": lambda: _seventh("held-out-7", 1),
}
#: The parts of other languages' files, an HTML page read as the text it shows.
LANGUAGE_PARTS: dict[str, Callable[[], list[languages.Unit]]] = {
    "tuned-9": lambda: _eighth("tuned-9", 0),
    "held-out-8": lambda: _eighth("held-out-8", 1),
    "tuned-11": lambda: _tenth("tuned-11", 0),
    "held-out-10": lambda: _tenth("held-out-10", 1),
}
#: The parts of manual pages, each read as the words `man` shows.
MANUAL_PARTS: dict[str, Callable[[], list[manuals.Page]]] = {
    "tuned-10": lambda: _ninth("tuned-10", 0),
    "held-out-9": lambda: _ninth("held-out-9", 1),
}
#: Every part, in the order of the rounds that split them.
ALL_PARTS = (*PARTS, *WHEEL_PARTS, "tuned-9", "held-out-8", *MANUAL_PARTS, "tuned-11", "held-out-10")
assert set(ALL_PARTS) == {*PARTS, *WHEEL_PARTS, *LANGUAGE_PARTS, *MANUAL_PARTS}


#: Hits a reader judged to be of a live-looking key (a real one shipped in the code, or a fixture no rule could tell
#: from one): counted apart from the false alarms, and listed with them. By the file's tail and the line.
LIVE_LOOKING: dict[tuple[str, int], str] = {
    ("kubernetes/aio/config/kube_config_test.py", 585): "a random 32-character refresh token (a test's)",
    ("kubernetes/aio/config/kube_config_test.py", 600): "a random 32-character refresh token (a test's)",
    ("websocket/tests/test_websocket.py", 124): "16 random bytes in base64 after `key =` (a WebSocket nonce)",
    ("chrome-devtools-mcp/build/src/third_party/index.js", 164980): "a Google API key the bundle ships",
    ("chrome-devtools-mcp/build/src/tools/performance.js", 209): "a Google API key the tool ships",
    ("chrome-devtools-mcp/build/src/third_party/lighthouse-devtools-mcp-bundle.js", 54985): "a Sentry DSN's key",
    ("es-toolkit/README.md", 3): "a Codecov badge token",
    # held-out-2, judged after its one run; RFC 5849/6749/7009's and Telegram's published samples are not here:
    # a list of published samples (as for Stripe's and jwt.io's) could tell them, so they are false alarms.
    ("oauthlib/oauth2/rfc6749/endpoints/resource.py", 40): "a random-looking 12-character token in a docstring",
    ("oauthlib/oauth2/rfc6749/endpoints/resource.py", 41): "a random-looking 10-character token in a docstring",
    ("oauthlib/oauth2/rfc6749/request_validator.py", 342): "a random-looking 15-character token in a docstring",
    ("oauthlib/oauth2/rfc6749/request_validator.py", 345): "a random-looking 11-character token in a docstring",
    ("undici/README.md", 3): "a Codecov badge token",
    ("undici/docs/docs/index.md", 5): "a Codecov badge token",
    # tuned-4, judged before any rule of the third round: API references' examples whose values are random
    # (nothing in them says example), and a mock's random tokens
    ("awscli/examples/cognito-idp/initiate-auth.rst", 22): "a random 9-character device group key (an example)",
    (
        "awscli/examples/cognito-idp/respond-to-auth-challenge.rst",
        23,
    ): "a random 9-character device group key (an example)",
    (
        "awscli/examples/cognito-idp/respond-to-auth-challenge.rst",
        73,
    ): "a random 9-character device group key (an example)",
    ("awscli/examples/directconnect/associate-virtual-interface.rst", 21): "a random BGP auth key (an example)",
    ("awscli/examples/directconnect/associate-virtual-interface.rst", 29): "a random BGP auth key (an example)",
    ("awscli/examples/directconnect/associate-virtual-interface.rst", 38): "a random BGP auth key (an example)",
    ("awscli/examples/ecr/get-download-url-for-layer.rst", 12): "a AWS access key id in a presigned URL (an example)",
    (
        "awscli/examples/ssm/get-deployable-patch-snapshot-for-instance.rst",
        17,
    ): "a AWS access key id in a presigned URL (an example)",
    ("awscli/examples/ecr-public/get-authorization-token.rst", 12): "a base64 authorization token (an example)",
    ("awscli/examples/iam/change-password.rst", 11): "a random password (an example)",
    ("awscli/examples/iam/change-password.rst", 12): "a random password (an example)",
    ("awscli/examples/iam/create-login-profile.rst", 14): "a random password (an example)",
    ("botocore/data/iam/2010-05-08/examples-1.json", 109): "a random password (an example)",
    ("botocore/data/iam/2010-05-08/examples-1.json", 110): "a random password (an example)",
    ("botocore/data/iam/2010-05-08/examples-1.json", 220): "a random password (an example)",
    ("awscli/examples/iam/create-service-specific-credential.rst", 16): "a base64 service password (an example)",
    ("awscli/examples/iam/reset-service-specific-credential.rst", 15): "a base64 service password (an example)",
    ("awscli/examples/iam/reset-service-specific-credential.rst", 37): "a base64 service password (an example)",
    ("awscli/examples/iotwireless/create-wireless-device.rst", 17): "a hex LoRaWAN key (an example)",
    ("awscli/examples/iotwireless/create-wireless-device.rst", 19): "a hex LoRaWAN key (an example)",
    ("awscli/examples/iotwireless/get-wireless-device.rst", 22): "a hex LoRaWAN key (an example)",
    ("awscli/examples/iotwireless/get-wireless-device.rst", 24): "a hex LoRaWAN key (an example)",
    ("awscli/examples/iotwireless/update-partner-account.rst", 8): "a hex private key (an example)",
    ("awscli/examples/kms/create-custom-key-store.rst", 39): "a base64 secret access key (an example)",
    ("awscli/examples/kms/create-custom-key-store.rst", 67): "a base64 secret access key (an example)",
    ("awscli/examples/kms/update-custom-key-store.rst", 57): "a base64 secret access key (an example)",
    ("awscli/examples/kms/derive-shared-secret.rst", 16): "a base64 shared secret (an example)",
    ("awscli/examples/payment-cryptography/export-key.rst", 9): "a export token with a random part (an example)",
    (
        "awscli/examples/payment-cryptography/get-parameters-for-export.rst",
        12,
    ): "a export token with a random part (an example)",
    (
        "awscli/examples/payment-cryptography/get-parameters-for-import.rst",
        12,
    ): "a import token with a random part (an example)",
    ("awscli/examples/payment-cryptography/import-key.rst", 8): "a import token with a random part (an example)",
    ("botocore/data/kms/2014-11-01/examples-1.json", 100): "a base64 token (an example)",
    ("botocore/data/storagegateway/2013-06-30/examples-1.json", 7): "a activation key (an example)",
    ("moto/ses/models.py", 1149): "a random base64 verification token (a mock's)",
    ("moto/ses/responses.py", 59): "a random base64 verification token (a mock's)",
    # held-out-4, judged after its one run: secrets the Cloud SDK's tools ship, and tests' random keys
    ("googlecloudsdk/api_lib/auth/util.py", 41): "an OAuth client secret gcloud ships",
    ("googlecloudsdk/command_lib/crash_handling.py", 89): "a Google API key gcloud ships",
    ("googlecloudsdk/command_lib/crash_handling.py", 92): "a Google API key gcloud ships",
    ("platform/bq/auth/utils.py", 15): "an OAuth client secret bq ships",
    ("platform/bq/auth/utils.py", 21): "an OAuth client secret bq ships",
    ("gslib/gcs_json_api.py", 343): "a Google API key gsutil ships",
    ("gslib/iamcredentials_api.py", 104): "a Google API key gsutil ships",
    ("gslib/kms_api.py", 99): "a Google API key gsutil ships",
    ("gslib/pubsub_api.py", 101): "a Google API key gsutil ships",
    ("cherrypy/lib/auth_digest.py", 16): "a random 16-hex digest key (a docstring's)",
    ("cherrypy/test/test_auth_digest.py", 32): "a random 16-hex digest key (a test's)",
    ("gslib/tests/test_data/test.json", 3): "a private key (a test's)",
    ("gslib/tests/test_encryption_helper.py", 100): "a random base64 encryption key (a test's)",
    ("boto/tests/unit/cloudfront/test_signed_urls.py", 15): "an RSA private key (a test's)",
}


#: tuned-6, judged before any rule of the fifth round: the keys, tokens and secrets yt-dlp's extractors ship to
#: call the sites they read (its test passwords, HLS tags and prose are false alarms).
_YT_DLP_SHIPS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("yt_dlp/extractor/adultswim.py", (87, 156)),
    ("yt_dlp/extractor/aenetworks.py", (23, 24, 26, 27, 28, 29)),
    ("yt_dlp/extractor/americastestkitchen.py", (100,)),
    ("yt_dlp/extractor/arte.py", (320,)),
    ("yt_dlp/extractor/asobichannel.py", (13,)),
    ("yt_dlp/extractor/bandlab.py", (153,)),
    ("yt_dlp/extractor/berufetv.py", (28,)),
    ("yt_dlp/extractor/bibeltv.py", (22,)),
    ("yt_dlp/extractor/bitchute.py", (255,)),
    ("yt_dlp/extractor/blackboardcollaborate.py", (159, 163, 167)),
    ("yt_dlp/extractor/blogger.py", (16,)),
    ("yt_dlp/extractor/brightcove.py", (104, 121)),
    ("yt_dlp/extractor/canalplus.py", (85,)),
    ("yt_dlp/extractor/cda.py", (39,)),
    ("yt_dlp/extractor/cloudflarestream.py", (46,)),
    ("yt_dlp/extractor/clyp.py", (24,)),
    ("yt_dlp/extractor/cybrary.py", (12,)),
    ("yt_dlp/extractor/dailymotion.py", (59,)),
    ("yt_dlp/extractor/dangalplay.py", (23, 24)),
    ("yt_dlp/extractor/digitalconcerthall.py", (78,)),
    ("yt_dlp/extractor/embedly.py", (12, 30)),
    ("yt_dlp/extractor/espn.py", (312, 324, 331, 332, 403, 413)),
    ("yt_dlp/extractor/fox.py", (57,)),
    ("yt_dlp/extractor/foxsports.py", (36,)),
    ("yt_dlp/extractor/go.py", (22, 28, 34, 41, 47)),
    ("yt_dlp/extractor/googledrive.py", (143,)),
    ("yt_dlp/extractor/imggaming.py", (15,)),
    ("yt_dlp/extractor/iqiyi.py", (107,)),
    ("yt_dlp/extractor/loco.py", (91,)),
    ("yt_dlp/extractor/mediaset.py", (108,)),
    ("yt_dlp/extractor/mzaalo.py", (69,)),
    ("yt_dlp/extractor/nationalgeographic.py", (23,)),
    ("yt_dlp/extractor/nba.py", (267,)),
    ("yt_dlp/extractor/nbc.py", (233,)),
    ("yt_dlp/extractor/nfl.py", (71, 72, 84)),
    ("yt_dlp/extractor/npr.py", (69,)),
    ("yt_dlp/extractor/ntvcojp.py", (57,)),
    ("yt_dlp/extractor/on24.py", (25, 38, 41, 44)),
    ("yt_dlp/extractor/pialive.py", (20,)),
    ("yt_dlp/extractor/polskieradio.py", (261,)),
    ("yt_dlp/extractor/radiocanada.py", (63,)),
    ("yt_dlp/extractor/redbee.py", (227,)),
    ("yt_dlp/extractor/redbulltv.py", (130,)),
    ("yt_dlp/extractor/scrippsnetworks.py", (49,)),
    ("yt_dlp/extractor/shahid.py", (20, 39, 40, 132)),
    ("yt_dlp/extractor/skynewsau.py", (28,)),
    ("yt_dlp/extractor/soundcloud.py", (32, 568, 1296)),
    ("yt_dlp/extractor/stacommu.py", (15, 125, 156, 177)),
    ("yt_dlp/extractor/tbs.py", (16, 17, 18)),
    ("yt_dlp/extractor/toutv.py", (38, 46)),
    ("yt_dlp/extractor/trunews.py", (20, 27)),
    ("yt_dlp/extractor/tver.py", (312, 349)),
    ("yt_dlp/extractor/tvw.py", (108,)),
    ("yt_dlp/extractor/twentythreevideo.py", (21,)),
    ("yt_dlp/extractor/vice.py", (103,)),
    ("yt_dlp/extractor/viddler.py", (61, 92)),
    ("yt_dlp/extractor/videa.py", (98,)),
    ("yt_dlp/extractor/vimeo.py", (1231,)),
    ("yt_dlp/extractor/vrt.py", (51, 52)),
    ("yt_dlp/extractor/weverse.py", (70,)),
    ("yt_dlp/extractor/wrestleuniverse.py", (32, 265)),
    ("yt_dlp/extractor/wykop.py", (24, 25)),
    ("yt_dlp/extractor/xiaohongshu.py", (30,)),
    ("yt_dlp/extractor/yle_areena.py", (108,)),
    ("yt_dlp/extractor/zattoo.py", (302,)),
    ("yt_dlp/extractor/zingmp3.py", (65,)),
    ("yt_dlp/extractor/zype.py", (20,)),
)
LIVE_LOOKING.update(
    {(tail, line): "a key or token yt-dlp's extractor ships" for tail, lines in _YT_DLP_SHIPS for line in lines}
)
#: held-out-5, judged after its one run: the private keys of Twisted's SSH tests (random keys, as a deployment's).
_TWISTED_TEST_KEYS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("twisted/conch/test/keydata.py", (179, 188, 209, 217, 265, 272, 288, 305, 334, 364, 397, 429, 576, 591)),
    ("twisted/conch/test/test_keys.py", (335, 351, 411)),
)
LIVE_LOOKING.update({(tail, line): "a private key (a test's)" for tail, lines in _TWISTED_TEST_KEYS for line in lines})
#: tuned-7, judged before any rule of the sixth round: what eth-utils' network list and bokeh's bundles ship.
LIVE_LOOKING.update(
    {
        ("eth_utils/__json/eth_networks.json", 1): "a node provider's user and password in RPC URLs eth-utils ships",
        ("bokeh/server/static/js/bokeh-tables.js", 19582): "an Octopart API key bokeh's bundle ships",
        ("bokeh/server/static/js/bokeh-tables.min.js", 111): "an Octopart API key bokeh's bundle ships",
    }
)
#: held-out-6, judged after its one run: the private keys of ecdsa's and PyCryptodome's tests, their random test
#: vectors' keys, and a Codecov badge token.
_CRYPTO_TEST_KEYS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("ecdsa/test_ecdh.py", (305,)),
    ("ecdsa/test_keys.py", (144, 527, 536, 545, 566, 591, 658, 754, 774, 789, 820, 846, 919, 1031, 1132)),
    ("Cryptodome/SelfTest/Signature/test_pkcs1_15.py", (152,)),
    ("Cryptodome/SelfTest/Signature/test_pss.py", (65,)),
    ("Cryptodome/SelfTest/Cipher/test_pkcs1_15.py", (71,)),
    ("Cryptodome/SelfTest/PublicKey/test_import_ECC.py", (190, 1123, 1130, 1378, 1385, 1668, 1674, 1957, 1965, 2256)),
    ("Cryptodome/SelfTest/PublicKey/test_import_ECC.py", (2265,)),
    ("Cryptodome/SelfTest/PublicKey/test_import_DSA.py", (146, 208, 256, 296)),
    ("Cryptodome/SelfTest/PublicKey/test_import_RSA.py", (81, 92, 108, 122)),
    ("Cryptodome/SelfTest/Protocol/test_ecdh.py", (154, 155, 157, 159)),
)
LIVE_LOOKING.update({(tail, line): "a private key (a test's)" for tail, lines in _CRYPTO_TEST_KEYS for line in lines})
LIVE_LOOKING.update(
    {
        ("ecdsa/test_ecdh.py", 326): "a random hex shared secret (a test vector's)",
        ("Cryptodome/SelfTest/Cipher/test_OpenPGP.py", 161): "a random hex cipher key (a test vector's)",
        ("Cryptodome/SelfTest/Cipher/test_OpenPGP.py", 189): "a random hex cipher key (a test vector's)",
        ("flax/nnx/README.md", 1): "a Codecov badge token",
    }
)

#: tuned-8, judged before held-out-7 was read: the Hugging Face token transformers' tests ship for its CI.
LIVE_LOOKING[("transformers/testing_utils.py", 221)] = "a Hugging Face token transformers' tests ship (its CI's)"

#: held-out-7, judged after its one run: the random passwords, tokens and API key of posthog's tests, the random
#: TOTP keys of passlib's (its published JBSWY3DPEHPK3PXP and its alphabet walks are false alarms).
LIVE_LOOKING.update(
    {
        ("posthog/test/test_code_variables.py", 884): "a random password (a test's)",
        ("posthog/test/test_code_variables.py", 1079): "a random token (a test's)",
        ("posthog/test/test_code_variables.py", 1101): "a random token (a test's)",
        ("posthog/test/test_code_variables.py", 1123): "a random token (a test's)",
        ("posthog/test/test_utils.py", 21): "a random API key (a test's)",
        ("passlib/tests/test_totp.py", 501): "a random TOTP key (a test's)",
        ("passlib/tests/test_totp.py", 588): "a random TOTP key (a test's)",
        ("passlib/tests/test_totp.py", 1176): "a random TOTP key (a test's)",
        ("passlib/tests/test_totp.py", 1181): "a random TOTP key (a test's)",
        ("passlib/tests/test_totp.py", 1189): "a random TOTP key (a test's)",
    }
)


#: tuned-10, judged before held-out-9 was read: the WireGuard private key of systemd.netdev(5)'s example, a random
#: key no rule could tell from a real one.
LIVE_LOOKING[("man5/systemd.netdev.5.gz", 2193)] = "a random WireGuard private key (a manual page's example)"

#: held-out-9, judged after its one run: a TLS session's master key in openssl-sess_id(1ssl)'s example output, and
#: a yescrypt hash with its salt in systemd-sysusers(8)'s: random, as no rule could tell from real ones.
LIVE_LOOKING.update(
    {
        ("man1/openssl-sess_id.1ssl.gz", 211): "a random TLS master key (a manual page's example output)",
        ("man8/systemd-sysusers.8.gz", 180): "a yescrypt password hash with a random salt (a manual page's example)",
    }
)


#: held-out-10, judged after its one run: the registry token of Cargo's book's example, random.
LIVE_LOOKING.update(
    {
        ("rust/html/cargo/print.html", 7965): "a random registry token (the Cargo book's example)",
        ("rust/html/cargo/reference/registries.html", 218): "a random registry token (the Cargo book's example)",
    }
)


def _live_looking(file: str, line: int) -> str:
    return next((why for (tail, at), why in LIVE_LOOKING.items() if at == line and file.endswith(tail)), "")


def _files(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found += sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return found


def _shown(path: Path) -> str:
    """A file's name in the listing: relative to the repository when inside it (node_modules is linked)."""
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _texts(part: str) -> Iterator[tuple[str, str]]:
    """A part's texts, each with the name the listing gives it; a file not in UTF-8 is skipped."""
    if part in WHEEL_PARTS:
        for shown, data in _wheel_texts(WHEEL_PARTS[part]()):
            try:  # newlines translated as reading a file in text mode does
                yield shown, data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
            except UnicodeDecodeError:
                continue
        return
    if part in MANUAL_PARTS:
        for page in MANUAL_PARTS[part]():
            try:
                yield str(page.path), manuals.read(page.path)
            except (UnicodeDecodeError, OSError, EOFError):
                continue
        return
    if part in LANGUAGE_PARTS:
        for path in (path for unit in LANGUAGE_PARTS[part]() for path in unit.files):
            try:
                yield str(path), languages.read(path)
            except (UnicodeDecodeError, OSError):
                continue
        return
    for path in _files(PARTS[part]()):
        try:
            yield _shown(path), path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def measure(part: str) -> dict[str, Any]:
    total, hits = 0, []
    started = time.perf_counter()
    for shown, text in _texts(part):
        total += len(text.encode())
        for finding in find_secrets(text):
            line = text.count("\n", 0, finding.start) + 1
            context = text[max(0, finding.start - 50) : finding.end + 20].replace("\n", "⏎")
            hits.append({"file": shown, "line": line, "kind": finding.kind, "context": context})
    return judged({"megabytes": round(total / 1e6, 2), "seconds": round(time.perf_counter() - started, 1)}, hits)


def judged(part: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
    """A part's figures from its hits, each marked with `LIVE_LOOKING`'s judgement: what `--judge` recomputes
    from a listing already written, without running the detector again."""
    for hit in hits:
        hit.pop("live_looking", None)
        if why := _live_looking(hit["file"], hit["line"]):
            hit["live_looking"] = why
    mb = part["megabytes"]
    false_alarms = sum(1 for hit in hits if "live_looking" not in hit)
    return {
        "megabytes": mb,
        "hits": len(hits),
        "live_looking": len(hits) - false_alarms,
        "false_alarms": false_alarms,
        "per_mb": round(false_alarms / mb, 3) if mb else 0.0,
        "hits_per_mb": round(len(hits) / mb, 3) if mb else 0.0,
        "by_kind": dict(Counter(h["kind"] for h in hits).most_common()),
        "seconds": part["seconds"],
        "listing": hits,
    }


def _package_version(name: str) -> str:
    manifest = json.loads((REPO / NODE_MODULES / name / "package.json").read_text())
    return str(manifest.get("version", ""))


def versions() -> dict[str, Any]:
    """What the parts are made of, as pinned: interpreter, Node, every distribution and package of each part."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    lock = REPO / LOCK
    found: dict[str, Any] = {
        "python": platform.python_version(),
        "node": node,
        "stdlib": str(STDLIB),
        "site-packages": sorted(str(site) for site in SITE),
        "node_modules": str(NODE_MODULES),
        "tests/peers/package-lock.json sha256": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.exists() else "",
        "tuned-2": {name: importlib.metadata.version(name) for name in LIBRARIES},
    }
    for part, parity in (("tuned-3", 0), ("held-out-2", 1)):
        dists, packages = _second(part, parity)
        found[part] = {
            "python": {n: d.version for n, d in dists.items()},
            "node_modules": {n: _package_version(n) for n in packages},
        }
    conformance_lock = REPO / CONFORMANCE_LOCK
    found["third split"] = {
        "interpreter site-packages": str(INTERPRETER_SITE),
        "debian dist-packages": str(DEBIAN_SITE),
        "node_modules": [str(CONFORMANCE), str(NPM_MODULES), str(GLOBAL_MODULES)],
        "docs": str(DOCS),
        "tests/conformance/package-lock.json sha256": (
            hashlib.sha256(conformance_lock.read_bytes()).hexdigest() if conformance_lock.exists() else ""
        ),
    }
    for part, parity in (("tuned-4", 0), ("held-out-3", 1)):
        units = _third(part, parity)
        found[part] = {
            source: {unit.name: unit.version for unit in units if unit.source == source}
            for source in ("python", "node_modules", "docs")
        }
    found["fourth split"] = {
        "fast-agent site-packages": [str(site.relative_to(REPO)) for site in _sites(REPO / FAST_AGENT)],
        "pyenv interpreters": [str(site) for site in _pyenv_sites()],
        "google-cloud-sdk": str(CLOUD_SDK),
        "google-cloud-sdk version": _sdk_version(),
    }
    for part, parity in (("tuned-5", 0), ("held-out-4", 1)):
        units = _fourth(part, parity)
        found[part] = {
            source: {unit.name: unit.version for unit in units if unit.source == source}
            for source in ("python", "docs", "google-cloud-sdk")
        }
    found["fifth split"] = {"archives": [str(directory) for directory in ARCHIVES], "cap bytes": ARCHIVE_CAP}
    for part, parity in (("tuned-6", 0), ("held-out-5", 1)):
        found[part] = {"pypi": {unit.name: unit.version for unit in _fifth(part, parity)}}
    found["sixth split"] = {"archives": [str(directory) for directory in ARCHIVES], "cap bytes": ARCHIVE_CAP}
    for part, parity in (("tuned-7", 0), ("held-out-6", 1)):
        found[part] = {"pypi": {unit.name: unit.version for unit in _sixth(part, parity)}}
    found["seventh split"] = {"archives": [str(directory) for directory in ARCHIVES], "cap bytes": ARCHIVE_CAP}
    for part, parity in (("tuned-8", 0), ("held-out-7", 1)):
        found[part] = {"pypi": {unit.name: unit.version for unit in _seventh(part, parity)}}
    found["eighth split"] = {
        "roots": [str(root) for _, root in languages.ROOTS],
        "packages": languages.package_versions(),
        "cap bytes": ARCHIVE_CAP,
    }
    for part, parity in (("tuned-9", 0), ("held-out-8", 1)):
        found[part] = {"files": {unit.name: unit.version for unit in _eighth(part, parity)}}
    found["ninth split"] = {"manuals": str(manuals.MANUALS)}
    for part, parity in (("tuned-10", 0), ("held-out-9", 1)):
        found[part] = {"pages": {page.name: page.version for page in _ninth(part, parity)}}
    found["tenth split"] = {"the eighth split's units its parts did not take": True, "cap bytes": ARCHIVE_CAP}
    for part, parity in (("tuned-11", 0), ("held-out-10", 1)):
        found[part] = {"files": {unit.name: unit.version for unit in _tenth(part, parity)}}
    return found


def _unlike(pinned: Any, got: Any, at: str = "") -> list[str]:
    """Where the versions found differ from the pinned ones, as `path: pinned -> found`."""
    if isinstance(pinned, dict) and isinstance(got, dict):
        return [d for key in sorted({*pinned, *got}) for d in _unlike(pinned.get(key), got.get(key), f"{at}/{key}")]
    return [] if pinned == got else [f"{at}: {pinned} -> {got}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=[*ALL_PARTS, "all"], default="all")
    parser.add_argument("--show", type=int, default=40, help="how many hits of each part to print")
    parser.add_argument("--pin", action="store_true", help="write the versions found as the pinned ones")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the JSON to write (the parts run replace theirs)")
    parser.add_argument("--listing", type=Path, default=LISTING, help="where every hit goes (the same merge)")
    parser.add_argument("--judge", action="store_true", help="only mark the written listing's live-looking hits")
    args = parser.parse_args()
    load = load_average()
    found = versions()
    if args.pin:
        PINS.write_text(json.dumps(found, indent=1) + "\n")
    unlike = _unlike(json.loads(PINS.read_text()), found)
    if unlike:
        print(f"note: other versions than the pinned ones: {unlike}", file=sys.stderr)
    parts = list(ALL_PARTS) if args.part == "all" else [args.part]
    report = json.loads(args.out.read_text()) if args.out.exists() else {}
    listings = json.loads(args.listing.read_text()) if args.listing.exists() else {}
    report.pop("versions", None)  # the pins file has them; a run records only where it differs from them
    report["unlike_pins"] = unlike
    if args.judge:  # the parts' listings as written, judged again: the detector is not run
        parts = [part for part in parts if part in report.get("parts", {}) and part in listings]
        got = {part: judged(report["parts"][part], listings[part]) for part in parts}
    else:
        got = {part: measure(part) for part in parts}
    listings.update({part: figures.pop("listing") for part, figures in got.items()})
    report.setdefault("parts", {}).update(got)
    report["parts"] = {part: report["parts"][part] for part in ALL_PARTS if part in report["parts"]}
    _print(report["parts"], listings, parts, args.show)
    report.update(stamp(invocation("bench.secrets_precision"), load))
    for path, doc in ((args.out, report), (args.listing, listings)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def _print(figures: dict[str, Any], listings: dict[str, Any], parts: list[str], show: int) -> None:
    print("| part | MB | hits | live-looking | false alarms | per MB | by kind |\n" + "| --- " * 7 + "|")
    for part in parts:
        got = figures[part]
        print(
            f"| {part} | {got['megabytes']} | {got['hits']} | {got['live_looking']} | {got['false_alarms']} "
            f"| {got['per_mb']} | {got['by_kind']} |"
        )
    for part in parts:
        for hit in listings[part][:show]:
            live = f" (live-looking: {hit['live_looking']})" if "live_looking" in hit else ""
            print(f"{part}: {hit['file']}:{hit['line']}: {hit['kind']}: {hit['context']}{live}")


if __name__ == "__main__":
    raise SystemExit(main())
