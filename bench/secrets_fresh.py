"""False alarms of the secret detector on text nobody here has read: three public repositories of ecosystems the
twenty parts of `secrets_precision.py` do not hold (Go, PHP, Elixir), each pinned to one commit before any rule
was changed against them, read in place from a local git mirror and never copied into this repository.

    PYTHONPATH=server:. python -m bench.secrets_fresh [--set first|…|sixth] [--mirrors DIR] [--listing F]

A mirror is a bare git repository at `DIR/<owner>+<name>/repo` (the layout the project's fetch tool writes). Every
blob of the pinned commit that is UTF-8 text is scanned, newlines as a text-mode read gives them. The figures
(megabytes, handles, handles per MB, by kind) print; the listing, with the text around each hit, goes only to the
file named by `--listing`, outside the repository: the fetched text is read, never committed. A hit is judged by
a reader (live-looking or false); the judgement is reported with the figures, not stored here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from offprompt.secrets import find_secrets

#: owner/name → the commit measured, fixed before any change to the rules.
REPOSITORIES = {
    "traefik/traefik": "fd5a576df2e8aeb0bfc8a96b6ef6e60a61f7ec0a",  # Go: a proxy, its docs full of config samples
    "laravel/framework": "bd71b45fbb7e672957bf6ff61baddefe15fbca6a",  # PHP
    "phoenixframework/phoenix": "167c46950cf53aef363d672687cc653267c20aa6",  # Elixir
}
#: A second set, pinned after the first set's hits had been read and rules fitted on them (so the first set is
#: no longer unread): measured once, at the end, never read before.
SECOND = {
    "caddyserver/caddy": "0cf03d32f7d99cf160d5375e8a40fbe3d910d515",  # Go
    "prometheus/prometheus": "d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86",  # Go
    "composer/composer": "eba7baa59eb1b59246cf9800b0120fe78915b6ac",  # PHP
    "elixir-ecto/ecto": "c624abf4297b27589a5a7351b55feb2316f61e1c",  # Elixir
}
#: A third set, of ecosystems neither earlier set nor the twenty parts hold (Java/Kotlin, C#, Scala), pinned before
#: the rules were redesigned toward literals of the text's kind and exceptions as data: measured once, at the end.
THIRD = {
    "spring-projects/spring-security": "d449950b36fe9387c9991130ca8e7701c902192a",  # Java, Kotlin
    "jellyfin/jellyfin": "c3ed1407ca698b0905de99da87b67415e6a62dbd",  # C#
    "playframework/playframework": "1a666e1866bfe54b166cfa8689f7c9d56e1b2224",  # Scala, Java
}
#: A fourth set, of ecosystems no earlier set, part or outside test holds (PHP beside laravel and composer, Lua,
#: Crystal), pinned before the third set's classes were ended: measured once, at the end.
FOURTH = {
    "cakephp/cakephp": "e15d186e05e9e02231d53ba3bb6daa9290c3a470",  # PHP
    "Kong/kong": "22246ef28c16842098369b494eef879222e30c7b",  # Lua: an API gateway and its auth plugins
    "crystal-lang/crystal": "3fe7241e32f80692aa875fde52c631e70882e402",  # Crystal
}
#: A fifth set, of ecosystems no earlier set, part or outside test holds (Haskell, OCaml, Erlang), pinned before
#: the rules read a key = value finding's value in the syntax of code: measured once, at the end.
FIFTH = {
    "haskell/cabal": "f5319cdb191236b3bc93e79c0b14e2c637300c5a",  # Haskell: a build tool, its docs and test suites
    "ocaml/dune": "8deee3bb92dcf42a861aaf3ac35182ca10511210",  # OCaml, dune's S-expressions
    "emqx/emqx": "50e04386de8416e53113a617a9fd67ab3b07aed4",  # Erlang: an MQTT broker and its auth backends
}
#: A sixth set, of ecosystems no earlier set, part or outside test holds (Swift, Dart, Nim), pinned before a bare
#: value in code stopped counting as a key = value secret: measured once, at the end.
SIXTH = {
    "apple/swift-package-manager": "9a718f6dc1c176bca13fb1205db6087d9f9a8f8d",  # Swift: registries, netrc, signing
    "firebase/flutterfire": "09d423b800a966fead9eba1f4bdbc322d2720335",  # Dart: Firebase options, app config
    "nim-lang/Nim": "b534f34e95402479c1d5c5bdab92d87862f323d4",  # Nim: compiler, stdlib clients and their tests
}
SETS = {"first": REPOSITORIES, "second": SECOND, "third": THIRD, "fourth": FOURTH, "fifth": FIFTH, "sixth": SIXTH}
MIRRORS = Path("/work/.mirror")


def _blobs(git_dir: Path, commit: str) -> Iterator[tuple[str, bytes]]:
    """Every file of the commit: its path and its bytes, read with one `git cat-file --batch`."""
    listing = subprocess.run(
        ["git", "-C", str(git_dir), "ls-tree", "-r", "-z", commit], capture_output=True, check=True
    ).stdout
    entries = [line.split(b"\t", 1) for line in listing.split(b"\0") if line]
    blobs = [(meta.split()[2].decode(), path.decode()) for meta, path in entries if meta.split()[1] == b"blob"]
    batch = subprocess.run(
        ["git", "-C", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
        capture_output=True,
        check=True,
    ).stdout
    at = 0
    for _, path in blobs:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if header[-1] == b"missing":  # a large file the mirror lists but does not hold
            at = header_end + 1
            continue
        size = int(header[2])
        yield path, batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1


def texts(mirrors: Path, repositories: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Each repository's text files, named `owner/name:path`; a binary or non-UTF-8 file is skipped."""
    for repo, commit in repositories.items():
        for path, data in _blobs(mirrors / repo.replace("/", "+") / "repo", commit):
            if b"\0" in data:
                continue
            try:
                yield f"{repo}:{path}", data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
            except UnicodeDecodeError:
                continue


def measure(mirrors: Path, repositories: dict[str, str]) -> dict[str, Any]:
    total, hits = 0, []
    started = time.process_time()
    for shown, text in texts(mirrors, repositories):
        total += len(text.encode())
        for finding in find_secrets(text):
            line = text.count("\n", 0, finding.start) + 1
            context = text[max(0, finding.start - 60) : finding.end + 20].replace("\n", "⏎")
            hits.append({"file": shown, "line": line, "kind": finding.kind, "context": context})
    mb = total / 1e6
    return {
        "repositories": repositories,
        "megabytes": round(mb, 2),
        "hits": len(hits),
        "hits_per_mb": round(len(hits) / mb, 3),
        "by_kind": dict(Counter(h["kind"] for h in hits).most_common()),
        "cpu_seconds": round(time.process_time() - started, 1),
        "listing": hits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=MIRRORS)
    parser.add_argument("--set", choices=list(SETS), default="first")
    parser.add_argument("--listing", type=Path, help="where to write every hit with its text (outside the repo)")
    args = parser.parse_args()
    found = measure(args.mirrors, SETS[args.set])
    if args.listing:
        args.listing.write_text(json.dumps(found, indent=1, ensure_ascii=False))
    print(json.dumps({k: v for k, v in found.items() if k != "listing"}, indent=1))


if __name__ == "__main__":
    main()
