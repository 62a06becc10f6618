"""What a results file measures: the repository's files its stamped command imports, starts and reads.

The figures check (`bench/figures.py`) lists a results file as possibly stale when one of these files changed
between the commit its run was at and HEAD, and names the first one. They are read from the source as it is
now, nothing imported:

- the module the command runs (`python -m MOD ...` or `python path/to/script.py ...`, each side of `&&`), and
  every module of this repository it imports, at any depth and in any function. An absolute import is looked
  up in `server/` and the repository's root and, for a module in a directory that is no package
  (`bench/retrieval/`), first beside it, as its scripts put that directory on `sys.path`;
- `python -m bench` imports its sections by name (`bench/run.py`): the ones `--only` names, or else every
  module of `bench/sections/` less `--skip`;
- what a measured module starts as a subprocess: a literal `"-m", "NAME"` in a list or a call, NAME a module
  of this repository (`-m offprompt` runs its `__main__`), or a literal path of one of its `.py` files;
- data: the files other than Python and Markdown beside a measured module (one named after a module,
  `secrets_precision_pins.json`, only with that module), and everything under a `data/` directory beside
  one. Where the command says `--set NAME` and that `data/` holds `NAME/`, the other directories there are
  other question sets, left out.

Markdown outside `data/`, and `bench/results/` (a run's file is committed after the run), are never measured.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = re.compile(r"(.*/)?python[\d.]*")
RESULTS = "bench/results/"
SEPARATORS = {"&&", "||", ";", "|"}


@dataclass(frozen=True, slots=True)
class Run:
    """One Python command of a stamp: the module or script it runs, and its arguments."""

    module: str | None
    script: str | None
    args: list[str]

    def option(self, name: str) -> str | None:
        """The value of `--name VALUE` or `--name=VALUE`, the last one given."""
        value = None
        for i, arg in enumerate(self.args):
            if arg == name and i + 1 < len(self.args):
                value = self.args[i + 1]
            elif arg.startswith(f"{name}="):
                value = arg.partition("=")[2]
        return value


def runs(command: str) -> list[Run]:
    """The Python commands of a shell command line (env assignments, `nice -n 10` and such before them);
    [] when none can be read, as for `python -c` or a line that is not shell."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    found, part = [], []
    for word in [*words, "&&"]:
        if word not in SEPARATORS:
            part.append(word)
            continue
        if (run := _python_run(part)) is not None:
            found.append(run)
        part = []
    return found


def _python_run(words: list[str]) -> Run | None:
    start = next((i for i, w in enumerate(words) if PYTHON.fullmatch(w)), None)
    if start is None:
        return None
    rest = words[start + 1 :]
    while rest and rest[0].startswith("-") and rest[0] not in {"-m", "-c"}:
        rest = rest[1:]  # the interpreter's own options (-u, -X dev, ...)
    if len(rest) >= 2 and rest[0] == "-m":
        return Run(rest[1], None, rest[2:])
    if rest and rest[0].endswith(".py"):
        return Run(None, rest[0], rest[1:])
    return None


@dataclass(slots=True)
class Measured:
    """The files a command measures, each with why: the module that imports, starts or reads it."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)  # path → why, in the order found (nearest first)
    data: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)  # (dir/, reader, sets left out)
    named: dict[str, str] = field(default_factory=dict)  # a data file named after its module → that module

    def why(self, path: str) -> str | None:
        """Why a changed file matters to the figures: `imported by X`, `read by X`, ...; None if it does not."""
        if path.startswith(RESULTS):
            return None
        if path in self.files:
            return self.files[path]
        if path in self.named:
            return f"read by {self.named[path]}" if self.named[path] in self.files else None
        for directory, reader, others in self.data:
            inside = path.startswith(directory) and "/" not in path[len(directory) :]
            if inside and not path.endswith((".py", ".md")) and path not in self.named:
                return f"beside {reader}"
            if path.startswith(f"{directory}data/") and not others & {path[len(directory) + 5 :].split("/")[0]}:
                return f"data of {reader}"
        return None

    def first_changed(self, changed: Iterable[str]) -> tuple[str, str, int] | None:
        """The first changed file measured (nearest the command first), why, and how many changed in all."""
        hits = {path: why for path in changed if (why := self.why(path))}
        order = [p for p in self.files if p in hits] + sorted(p for p in hits if p not in self.files)
        return (order[0], hits[order[0]], len(order)) if order else None


def _run(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of a module but those under `if TYPE_CHECKING:`, which never run."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _type_checking(node.test):
            stack += reversed(node.orelse)
        else:
            stack += reversed(list(ast.iter_child_nodes(node)))


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class Sources:
    """The repository's Python sources read for their imports, each parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.path = [self.root / "server", self.root]  # sys.path as the benches run: offprompt from server/
        self._edges: dict[Path, list[tuple[Path, str]]] = {}
        self._found: dict[tuple[tuple[str, ...], tuple[Path, ...]], list[Path]] = {}

    def measured(self, command: str) -> Measured | None:
        """What a stamped command measures; None when no Python command can be read from it."""
        found = runs(command)
        if not found:
            return None
        measured = Measured(self.root)
        queue: list[tuple[Path, str]] = []
        for run in found:
            queue += [(path, f"run by `{command}`") for path in self._entries(run)]
        self._close(queue, measured)
        sets = frozenset(filter(None, (run.option("--set") for run in found)))
        self._data(measured, sets)
        return measured

    def _entries(self, run: Run) -> list[Path]:
        if run.script:
            script = Path(run.script).resolve() if Path(run.script).is_absolute() else self.root / run.script
            return [script] if script.is_file() else []
        assert run.module is not None
        entries = self._main(run.module)
        if run.module == "bench":  # bench/run.py imports the sections by name
            only = [s for s in (run.option("--only") or "").split(",") if s]
            skip = set((run.option("--skip") or "").split(","))
            every = sorted(p.stem for p in (self.root / "bench" / "sections").glob("*.py") if p.stem != "__init__")
            for name in only or [s for s in every if s not in skip]:
                entries += self._find(["bench", "sections", name], self.path)
        return entries

    def _main(self, module: str) -> list[Path]:
        """What `python -m MODULE` executes: the module, or a package's `__main__`, with the packages above."""
        files = list(self._find(module.split("."), self.path))  # a copy: the look-ups are kept
        if files and files[-1].name == "__init__.py" and (main := files[-1].with_name("__main__.py")).is_file():
            files.append(main)
        return files

    def _close(self, queue: list[tuple[Path, str]], measured: Measured) -> None:
        """Every file the queued ones import or start, breadth first, each with the one that brought it."""
        while queue:
            path, why = queue.pop(0)
            name = self._name(path)
            if not name or name in measured.files:
                continue
            measured.files[name] = why
            queue += [(found, f"{how} by {name}") for found, how in self._imports(path)]

    def _name(self, path: Path) -> str:
        """A file's path from the repository's root, as git names it; "" for one outside it."""
        try:
            return path.relative_to(self.root).as_posix()  # every path here is made from the root
        except ValueError:
            return ""

    def _data(self, measured: Measured, sets: frozenset[str]) -> None:
        directories: dict[str, str] = {}
        for name in measured.files:
            directories.setdefault(name.rpartition("/")[0] + "/", name)
        for directory, reader in directories.items():
            here = self.root / directory
            stems = sorted((p.stem for p in here.glob("*.py")), key=len, reverse=True)
            for data in here.iterdir():
                owner = next((s for s in stems if data.is_file() and data.name.startswith((f"{s}_", f"{s}."))), "")
                if owner and data.suffix != ".py":
                    measured.named[f"{directory}{data.name}"] = f"{directory}{owner}.py"
            named = sets & {p.name for p in (here / "data").glob("*") if p.is_dir()}
            others = {p.name for p in (here / "data").glob("*") if p.is_dir()} - named if named else set()
            measured.data.append((directory, reader, frozenset(others)))

    # --- imports -------------------------------------------------------------------------------------------

    def _imports(self, path: Path) -> list[tuple[Path, str]]:
        """The files a module imports or starts, each with which."""
        if path not in self._edges:
            self._edges[path] = list(dict.fromkeys(self._read(path))) if path.suffix == ".py" else []
        return self._edges[path]

    def _read(self, path: Path) -> Iterator[tuple[Path, str]]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            return
        beside = [] if (path.parent / "__init__.py").is_file() else [path.parent]  # a script's directory
        for node in _run(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield from ((f, "imported") for f in self._find(alias.name.split("."), [*beside, *self.path]))
            elif isinstance(node, ast.ImportFrom):
                yield from ((f, "imported") for f in self._from(node, path, beside))
            elif isinstance(node, (ast.List, ast.Tuple, ast.Call)):
                items = node.args if isinstance(node, ast.Call) else node.elts
                yield from ((f, "started") for f in self._started(items))

    def _from(self, node: ast.ImportFrom, path: Path, beside: list[Path]) -> Iterator[Path]:
        """`from A import b`: A, and b too when it is a module of A."""
        parts = node.module.split(".") if node.module else []
        bases = [*beside, *self.path]
        if node.level:
            bases = [path.parents[node.level - 1]]
        yield from self._find(parts, bases)
        for alias in node.names:
            yield from self._find([*parts, alias.name], bases)

    def _started(self, items: list[ast.expr]) -> Iterator[Path]:
        """A module a list or call starts as a process: `"-m", "NAME"`, or a literal path of a .py file."""
        words = [item.value if isinstance(item, ast.Constant) and isinstance(item.value, str) else "" for item in items]
        for i, word in enumerate(words):
            if word == "-m" and i + 1 < len(words) and re.fullmatch(r"[\w.]+", words[i + 1]):
                yield from self._main(words[i + 1])
            elif word.endswith(".py") and "/" in word and (self.root / word).is_file():
                yield self.root / word

    def _find(self, parts: list[str], bases: list[Path]) -> list[Path]:
        """The files `import a.b.c` runs, from the first base that has `a`: each package's `__init__` on the way
        and the module; [] when no base has it (the standard library, an installed package)."""
        key = (tuple(parts), tuple(bases))
        if key not in self._found:
            self._found[key] = self._look_up(parts, bases)
        return self._found[key]

    def _look_up(self, parts: list[str], bases: list[Path]) -> list[Path]:
        for base in bases:
            files: list[Path] = []
            here = base
            for part in parts:
                if (here / part / "__init__.py").is_file():
                    here = here / part
                    files.append(here / "__init__.py")
                elif (here / f"{part}.py").is_file():
                    files.append(here / f"{part}.py")
                    break  # a module: nothing below it is imported
                elif (here / part).is_dir():
                    here = here / part  # a namespace package (bench/retrieval)
                else:
                    break
            if files:
                return files
        return []
