"""The eighth split's source for `bench.secrets_precision`: code and docs of other languages on the machine, none
of it in an earlier part (those hold Python, JavaScript and the text of Debian's package docs).

Perl's library (`/usr/share/perl`, `/usr/share/perl5` and the architecture's `/usr/lib/x86_64-linux-gnu/perl*`),
Vim's runtime (`/usr/share/vim`), CMake's modules and help, Tcl/Tk's libraries, PostgreSQL's shared SQL and
samples, and the Rust toolchain's HTML docs (its books, its API references and its rendered sources; read as the
text a page shows, tags and scripts aside, as a fetch tool gives it). A unit is an entry of one of these
directories (a Perl module's `.pm` and its directory are one unit, by the module's name); the entries of the
larger ones (`CUT`) are cut one level more. Each name is taken once, in the order of the roots.

A unit's version is the SHA-256 of its files, as for a doc directory of the third split; the Debian packages and
the Rust toolchain they come from are pinned beside.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

RUST_DOCS = Path.home() / ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html"
RUST_MANIFEST = RUST_DOCS.parents[3] / "lib/rustlib/multirust-channel-manifest.toml"

#: (name prefix, directory): the units are its entries.
ROOTS: tuple[tuple[str, Path], ...] = (
    ("perl", Path("/usr/share/perl/5.36.0")),
    ("perl", Path("/usr/share/perl5")),
    ("perl", Path("/usr/lib/x86_64-linux-gnu/perl/5.36.0")),
    ("perl", Path("/usr/lib/x86_64-linux-gnu/perl5/5.36")),
    ("perl", Path("/usr/lib/x86_64-linux-gnu/perl-base")),
    ("vim", Path("/usr/share/vim/vim90")),
    ("vim", Path("/usr/share/vim/vimfiles")),
    ("cmake", Path("/usr/share/cmake-3.25")),
    ("tcl", Path("/usr/share/tcltk/tcl8.6")),
    ("tk", Path("/usr/share/tcltk/tk8.6")),
    ("postgresql", Path("/usr/share/postgresql/15")),
    ("rust-docs", RUST_DOCS),
)
#: Entries whose own entries are the units (each is most of a part whole).
CUT = frozenset(
    {
        "cmake/Modules", "cmake/Help", "vim/doc", "vim/syntax", "vim/autoload",
        "rust-docs/core", "rust-docs/std", "rust-docs/alloc", "rust-docs/src",
    }
)  # fmt: skip
#: rustdoc's generated search data and assets: no text a reader sees.
SKIPPED = frozenset({"rust-docs/static.files", "rust-docs/search.index", "rust-docs/type.impl", "rust-docs/trait.impl"})
SUFFIXES = frozenset(
    {
        ".pm", ".pl", ".pod", ".vim", ".txt", ".cmake", ".rst", ".tcl", ".sql", ".sample", ".conf", ".html", ".md",
        ".json", ".toml",
    }
)  # fmt: skip
#: The Debian packages the directories come from.
PACKAGES = ("perl-modules-5.36", "perl-base", "libperl5.36", "vim-runtime", "cmake-data", "tcl8.6", "tk8.6")
PACKAGES_MORE = ("postgresql-15",)


@dataclass(frozen=True, slots=True)
class Unit:
    name: str  # `perl/CPAN`, `rust-docs/core/iter`
    version: str  # the SHA-256 of its files
    files: tuple[Path, ...]
    size: int  # the files' bytes


def _files(entries: list[Path]) -> list[Path]:
    found: list[Path] = []
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_file() and entry.suffix in SUFFIXES:
            found.append(entry)
        elif entry.is_dir():
            found += sorted(p for p in entry.rglob("*") if p.suffix in SUFFIXES and p.is_file() and not p.is_symlink())
    return found


def _unit(name: str, entries: list[Path]) -> Unit | None:
    files = _files(entries)
    if not files:
        return None
    digest = hashlib.sha256()
    size = 0
    for path in files:
        data = path.read_bytes()
        size += len(data)
        digest.update(f"{path.name}\0".encode() + data + b"\0")
    return Unit(name, f"sha256:{digest.hexdigest()[:16]}", tuple(files), size)


def _grouped(directory: Path) -> dict[str, list[Path]]:
    """A directory's entries by name, a file's suffix aside: `CPAN.pm` and `CPAN/` are the module `CPAN`."""
    groups: dict[str, list[Path]] = {}
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        key = entry.name if entry.is_dir() else entry.name.removesuffix(entry.suffix)
        groups.setdefault(key, []).append(entry)
    return groups


@cache
def units() -> tuple[Unit, ...]:
    """Every unit of the roots on this machine, each name once, in the order of the roots."""
    found: dict[str, Unit] = {}
    for prefix, root in ROOTS:
        if not root.is_dir():
            continue
        for key, entries in _grouped(root).items():
            name = f"{prefix}/{key}"
            if name in SKIPPED or name in found:
                continue
            directory = next((entry for entry in entries if entry.is_dir()), None)
            if name in CUT and directory is not None:
                own = [entry for entry in entries if entry != directory]
                if (unit := _unit(f"{name}/.", own)) is not None:
                    found.setdefault(unit.name, unit)
                for sub, sub_entries in _grouped(directory).items():
                    if (unit := _unit(f"{name}/{sub}", sub_entries)) is not None:
                        found.setdefault(unit.name, unit)
            elif (unit := _unit(name, entries)) is not None:
                found[name] = unit
    return tuple(found.values())


def read(path: Path) -> str:
    """A file's text: an HTML page's as shown (tags, scripts and styles aside)."""
    text = path.read_text(encoding="utf-8")
    return _PageText.of(text) if path.suffix == ".html" else text


class _PageText(HTMLParser):
    """The text of a page as a reader sees it: what is between the tags, entities decoded."""

    _HIDDEN = frozenset({"script", "style"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += tag in self._HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in self._HIDDEN and self.hidden > 0

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)

    @classmethod
    def of(cls, html: str) -> str:
        parser = cls()
        parser.feed(html)
        parser.close()
        return "".join(parser.parts)


def package_versions() -> dict[str, str]:
    """The installed versions of the Debian packages and the Rust toolchain the roots come from."""
    found: dict[str, str] = {}
    for package in (*PACKAGES, *PACKAGES_MORE):
        query = ["dpkg-query", "-W", "-f", "${Version}", package]
        found[package] = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
    manifest = RUST_MANIFEST.read_text() if RUST_MANIFEST.is_file() else ""
    date = re.search(r'^date = "([^"]+)"', manifest, re.MULTILINE)
    found["rust stable toolchain"] = date.group(1) if date else ""
    return found
