"""The largest functions of a source tree, by lines (decorators and docstring included):

    python -m bench.function_sizes [--top N] [PATH ...]

PATH is a directory or a file (default: server/offprompt); each is reported on its own. A function nested in
another counts in both: the outer one's lines include it, as a reader has to read them. Methods are named
`Class.method`, nested functions `outer.inner`.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    line: int
    lines: int


def functions(path: Path, base: Path) -> list[Function]:
    """Every function and method in the file at `path`, named by where it is defined."""
    found: list[Function] = []
    relative = str(path.relative_to(base))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTIONS):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                end = child.end_lineno or child.lineno
                found.append(Function(relative, prefix + child.name, start, end - start + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), str(path)), "")
    return found


def largest(target: Path, top: int) -> list[Function]:
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
    every = [f for path in files for f in functions(path, ROOT)]
    return sorted(every, key=lambda f: (-f.lines, f.path, f.line))[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="how many functions to show (default 5)")
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "server" / "offprompt"])
    args = parser.parse_args()
    for target in args.paths:
        resolved = target.resolve()
        print(f"{resolved.relative_to(ROOT)}: the {args.top} largest functions")
        for f in largest(resolved, args.top):
            print(f"  {f.lines:4d}  {f.path}:{f.line}  {f.name}")


if __name__ == "__main__":
    main()
