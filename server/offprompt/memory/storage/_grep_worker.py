"""The process `memory_grep` runs its regular expression in, so a pattern that never ends can be killed.

Run as a script (stdlib only, nothing of offprompt imported: it starts in a few tens of milliseconds). It reads
one JSON job per stdin line and writes one JSON answer per stdout line, until stdin closes:

    {"pattern": str, "files": [[path, namespace, item], ...], "max_matches": int, "excerpt_chars": int,
     "seconds": float, "memory_bytes": int}
    -> {"matches": [[namespace, item, line, byte_offset, excerpt], ...], "truncated": bool}
     | {"error": "the regex compile error"}
     | {"limit": "memory"}

Python's `re` holds the GIL and cannot be interrupted, so the parent kills this process at the time limit. An
orphaned worker (its parent killed with -9) still dies: each job sets a CPU-time limit the kernel enforces.
Each job also caps the worker's address space: a line is held whole until its newline, so a text with no
newline at all would otherwise take as much memory as it is long; past the cap the job answers the limit.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

if sys.platform != "win32":
    import resource

#: Extra CPU seconds a job may use before the kernel kills the worker (the parent normally kills it first).
_CPU_MARGIN = 2


def _excerpt(line: str, start: int, end: int, limit: int) -> str:
    """The line, or for a very long one (minified JSON, a base64 blob) the part around the match."""
    if len(line) <= limit:
        return line
    margin = max((limit - (end - start)) // 2, 40)
    a, b = max(start - margin, 0), min(end + margin, len(line))
    return ("…" if a > 0 else "") + line[a:b] + ("…" if b < len(line) else "")


#: Bytes read at a time: a block's whole lines are decoded and split at once (as fast as reading the file whole,
#: in constant memory); a longer line is held whole until its newline.
_BLOCK = 1 << 20


def _blocks(f: BinaryIO) -> Iterator[list[str]]:
    """The file's lines, a block's worth at a time; like str.split("\\n"), a final newline (or an empty file)
    ends with one empty line."""
    pending: list[bytes] = []  # the start of a line that has not ended yet
    while block := f.read(_BLOCK):
        cut = block.rfind(b"\n")
        if cut == -1:
            pending.append(block)
            continue
        pending.append(block[:cut])
        yield b"".join(pending).decode("utf-8").split("\n")
        pending = [block[cut + 1 :]]
    yield [b"".join(pending).decode("utf-8")]


def _grep(job: dict[str, Any]) -> dict[str, Any]:
    try:
        regex = re.compile(job["pattern"])
    except (re.error, OverflowError, RecursionError) as exc:
        return {"error": str(exc)}
    search = regex.search
    limit, excerpt_chars = int(job["max_matches"]), int(job["excerpt_chars"])
    matches: list[list[Any]] = []
    for path, namespace, item in job["files"]:
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            continue  # deleted while we searched
        with f:
            line_no, position = 0, 0
            for lines in _blocks(f):
                for line in lines:
                    line_no += 1
                    found = search(line)
                    if found:
                        if len(matches) >= limit:
                            return {"matches": matches, "truncated": True}
                        at = position + len(line[: found.start()].encode("utf-8"))
                        excerpt = _excerpt(line.rstrip("\r"), found.start(), found.end(), excerpt_chars)
                        matches.append([namespace, item, line_no, at, excerpt])
                    position += 1 + (len(line) if line.isascii() else len(line.encode("utf-8")))
    return {"matches": matches, "truncated": False}


def _limit_cpu(seconds: float) -> None:
    if sys.platform == "win32":
        return  # no CPU limit there: the parent's kill is the only bound
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(spent + seconds) + _CPU_MARGIN
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _limit_memory(memory_bytes: int) -> None:
    if sys.platform == "win32" or memory_bytes <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        memory_bytes = min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, hard))


def main() -> None:
    for request in sys.stdin.buffer:
        job = json.loads(request)
        _limit_cpu(float(job["seconds"]))
        _limit_memory(int(job["memory_bytes"]))
        try:
            answer = _grep(job)
        except MemoryError:  # the line being held is freed with the failed job's frames
            answer = {"limit": "memory"}
        sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
