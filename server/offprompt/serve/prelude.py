"""The first answers over stdio, given before the SDK is imported.

A client starts offprompt and sends `initialize`, then `tools/list`, and gives
them a few seconds (Claude Code 5 for the list). Importing the SDK, pydantic
and the proxy takes most of a second on two cores, longer than a bare SDK
server needs to answer. So the process starts that import in a thread and,
meanwhile, answers those two requests from what offprompt answered the last
time it was started the same way (same command line, same config file, same
client parameters): the front cache, kept beside the lists cache.

When the import is done, everything read so far is handed to the real server
(`serve.stdio`): the requests answered here are replayed to it, their answers
dropped, and a `tools/list` whose real answer differs is followed by
`notifications/tools/list_changed`; every other line is served as if it had
just arrived. A first start, a changed config or a client that starts another
way (`server/discover`) is served by the real server from its first line.

This module imports the standard library and platformdirs only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from offprompt._version import __version__
from offprompt.cache_dir import cache_directory

__all__ = ["FrontCache", "Handoff", "answer_first_requests"]

_VERSION = 1  # of the front cache's file shape
#: A line longer than this ends the prelude: the real server reads it, under its own limits.
_MAX_PRELUDE_LINE = 1 << 20
_POLL_SECONDS = 0.005
_UNUSED_SECONDS = 30 * 86400


@dataclass(frozen=True, slots=True)
class FrontCache:
    """Where the answers to `initialize` and `tools/list` of one way of starting offprompt are kept."""

    directory: Path
    #: What the answers depend on besides the client's parameters: the version, the command line, the config.
    start_key: str

    @classmethod
    def for_serve(cls, argv: Sequence[str], cache_dir: Path | None = None) -> FrontCache | None:
        """The cache for `offprompt serve ARGV` over stdio, or None when it is served another way (HTTP, SSE), is
        only asked for help, or names a config file that cannot be read (the real start says why)."""
        if sys.platform == "win32" or not argv or argv[0] != "serve" or any(a in ("-h", "--help") for a in argv):
            return None  # Windows' select takes sockets only, not the pipes a client gives
        if not all(_unambiguous(argv, name) for name in ("--config", "--transport")):
            return None
        transport = _option(argv, "--transport")
        if transport not in (None, "stdio"):
            return None
        config = _option(argv, "--config")
        try:
            written = Path(config).read_bytes() if config is not None else b""
        except OSError:
            return None
        where = str(Path(config).resolve()) if config is not None else ""
        settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("OFFPROMPT_"))
        text = json.dumps([_VERSION, __version__, _code(), list(argv), where, settings])
        digest = hashlib.sha256(text.encode() + b"\0" + written).hexdigest()
        return cls(cache_dir or cache_directory("front"), digest)

    def _path(self, params: Mapping[str, Any]) -> Path:
        client = json.dumps(params, sort_keys=True, separators=(",", ":"))
        return self.directory / f"{hashlib.sha256((self.start_key + client).encode()).hexdigest()[:32]}.json"

    def answers(self, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The results of `initialize` and `tools/list` given last time to a client with these `initialize`
        parameters, or None (never, or the file is unreadable)."""
        try:
            data = json.loads(self._path(params).read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return None
        initialize, tools = data.get("initialize"), data.get("tools")
        if not (isinstance(initialize, dict) and isinstance(tools, dict)):
            return None
        return initialize, tools

    def save(self, params: Mapping[str, Any], initialize: Mapping[str, Any], tools: Mapping[str, Any]) -> None:
        """Keep the real server's answers for the next start (written whole or not at all, mode 0600)."""
        path = self._path(params)
        tmp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                json.dump({"version": _VERSION, "initialize": initialize, "tools": tools}, out)
            os.replace(tmp, path)
        except OSError:  # a read-only cache, a full disk: the next start answers from the real server
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return
        self._prune(keep=path)

    def _prune(self, keep: Path) -> None:
        """Drop answers no start has used for a month (a client's update changes its parameters, so its old
        ones would never be read again)."""
        old = time.time() - _UNUSED_SECONDS
        for other in self.directory.glob("*.json"):
            with contextlib.suppress(OSError):
                seen = other.stat()
                if other != keep and max(seen.st_atime, seen.st_mtime) < old:
                    other.unlink()


def _code() -> list[Any]:
    """What tells this code from an upgraded one: the modification times of offprompt's modules (an editable
    install's `git pull` changes some) and of the SDK's packages (an upgrade rewrites them), found without
    importing them."""
    import importlib.util

    here = Path(__file__).resolve().parent.parent
    stamps: list[Any] = [max((p.stat().st_mtime_ns for p in here.rglob("*.py")), default=0)]
    for package in ("mcp", "mcp_types"):
        spec = importlib.util.find_spec(package)
        origin = spec.origin if spec is not None else None
        stamps.append(os.stat(origin).st_mtime_ns if origin else None)
    return stamps


def _unambiguous(argv: Sequence[str], name: str) -> bool:
    """Whether `name` is given at most once and never abbreviated (argparse takes both; the key would not)."""
    given = [a.split("=", 1)[0] for a in argv if a.startswith("--")]
    abbreviated = any(g != name and len(g) > 2 and name.startswith(g) for g in given)
    return not abbreviated and given.count(name) <= 1


def _option(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


@dataclass(slots=True)
class Handoff:
    """What the prelude read and answered, for the real server to go on from."""

    front: FrontCache
    #: Every byte read from stdin, in order: the real server reads these before the pipe.
    read: bytes = b""
    #: The requests answered here, by id: the result given, which the real server's own answer is checked against.
    answered: dict[str | int, dict[str, Any]] = field(default_factory=dict)


def answer_first_requests(front: FrontCache, importing: threading.Thread, stdin: int = 0, stdout: int = 1) -> Handoff:
    """Answer `initialize` and `tools/list` from `front` while `importing` runs; return when it has ended, or at
    the first message answered here no longer (its bytes, and all later ones, are in the handoff's `read`)."""
    handoff = Handoff(front)
    if not (_is_pipe(stdin) and _is_pipe(stdout)):
        importing.join()
        return handoff
    buffer = bytearray()
    answering = _Answering(front, stdout, handoff.answered)
    with _exit_on_stop_signals():
        while importing.is_alive():
            line_end = buffer.find(b"\n")
            if line_end == -1:
                if len(buffer) > _MAX_PRELUDE_LINE or not _read_some(stdin, buffer):
                    break  # an overlong line, or stdin closed: both the real server's to handle
                continue
            message = _parse(bytes(buffer[:line_end]))
            if message is None or not answering.take(message):
                break
            handoff.read += bytes(buffer[: line_end + 1])
            del buffer[: line_end + 1]
        importing.join()
    handoff.read += bytes(buffer)
    return handoff


class _Answering:
    """The prelude's part of a session: `initialize` from the front cache, then `tools/list`."""

    def __init__(self, front: FrontCache, stdout: int, answered: dict[str | int, dict[str, Any]]) -> None:
        self._front = front
        self._stdout = stdout
        self._answered = answered
        self._cached: tuple[dict[str, Any], dict[str, Any]] | None = None

    def take(self, message: dict[str, Any]) -> bool:
        """Answer `message` if it is one of the prelude's; False hands it, and what follows, to the real server."""
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if request_id in self._answered:
            return False  # an id used again: the real server answers it, and nothing here is mistaken for it
        if method == "initialize" and self._cached is None and isinstance(params, dict) and request_id is not None:
            self._cached = self._front.answers(params)
            return self._cached is not None and self._give(request_id, self._cached[0])
        if self._cached is None:
            return False
        if method == "notifications/initialized" and request_id is None:
            return True  # replayed to the real server with the rest
        plain = params is None or (isinstance(params, dict) and set(params) <= {"_meta"})
        if (
            method == "tools/list"
            and request_id is not None
            and plain
            and isinstance((params or {}).get("_meta", {}), dict)
        ):
            return self._give(request_id, self._cached[1])
        return False

    def _give(self, request_id: str | int, result: dict[str, Any]) -> bool:
        _answer(self._stdout, request_id, result)
        self._answered[request_id] = result
        return True


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _read_some(fd: int, buffer: bytearray) -> bool:
    """Add what stdin has to `buffer` if it has something within a poll; False once it has closed."""
    ready, _, _ = select.select([fd], [], [], _POLL_SECONDS)
    if not ready:
        return True
    chunk = os.read(fd, 1 << 16)
    buffer += chunk
    return bool(chunk)


def _parse(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message to answer here, or None (not JSON, a batch, not an object: the real server's)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # the real server answers it: a parse error
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id = message.get("id")
    if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return None
    return message


def _answer(fd: int, request_id: Any, result: Mapping[str, Any]) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")).encode()
    view = memoryview(line + b"\n")
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def _exit_on_stop_signals() -> Any:
    """A client that stops offprompt during the prelude ends it at once: nothing is stored or open yet."""
    stops = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if sys.platform != "win32" else [])
    before: list[Callable[[int, FrameType | None], Any] | int | None] = []
    for stop in stops:
        ignored = signal.getsignal(stop) == signal.SIG_IGN  # as under nohup: it stays ignored
        before.append(signal.signal(stop, signal.SIG_IGN if ignored else _exit))
    try:
        yield
    finally:
        for stop, handler in zip(stops, before, strict=True):
            signal.signal(stop, handler if handler is not None else signal.SIG_DFL)


def _exit(signum: int, frame: FrameType | None) -> None:
    os._exit(0)
