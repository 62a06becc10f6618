"""A client's opening over stdio, answered before the SDK is imported.

A client starts offprompt and opens with `initialize` (or, at 2026-07-28, `server/discover`), then asks the lists,
and gives it a few seconds (Gemini CLI about 4; Claude Code 30 for the whole start). Importing the SDK, pydantic
and the proxy takes a second on two idle cores, many on a busy machine. So the process starts that import in a
thread and meanwhile answers from data: `initialize` for any client and protocol version, `server/discover`,
`ping` and `logging/setLevel` from the SDK server's own answers kept as package data (`serve.opening`), and
`tools/list` and `prompts/list` from the lists composed for this way of starting offprompt (the front cache:
same config file and bytes, settings and installed code; written by `serve` as soon as its servers have listed,
and by `check` and `init`), or, with no config, the memory tools' own lists of the package data.

When the import is done, everything read so far is handed to the real server (`serve.stdio`): the requests
answered here are replayed to it, their answers dropped, and a list whose real answer differs is followed by
its `list_changed` notification; every other line is served as if it had just arrived. The prelude hands over
at the first request it cannot answer; stdin closing with every request answered ends the process at once.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from offprompt._version import __version__
from offprompt.cache_dir import CACHE_ENV, cache_directory
from offprompt.private_dirs import private_dir
from offprompt.serve.opening import Opening, has_envelope

__all__ = ["FrontCache", "Handoff", "answer_first_requests", "exit_on_stop_signals"]

_VERSION = 2  # of the front cache's file shape (1 held one client's initialize and tools/list)
#: A line longer than this ends the prelude: the real server reads it, under its own limits.
_MAX_PRELUDE_LINE = 1 << 20
_POLL_SECONDS = 0.01  # how long a read waits before the import thread is looked at again
_UNUSED_SECONDS = 30 * 86400
LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})
INVALID_REQUEST = -32600


@dataclass(frozen=True, slots=True)
class FrontCache:
    """Where the lists of one way of starting offprompt are kept: `tools/list` and `prompts/list` as the server
    answers them, by protocol version (`serve.front_lists` composes them)."""

    directory: Path
    #: What the lists depend on: the config file (where it is and its bytes), the settings, the installed code.
    start_key: str
    #: No config: only the memory tools are listed, and the package data has their lists.
    config_free: bool = False

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
        return cls.for_config(Path(config) if config is not None else None, cache_dir)

    @classmethod
    def for_config(cls, config: Path | None, cache_dir: Path | None = None) -> FrontCache | None:
        """The cache of the lists `offprompt serve --config CONFIG` answers (`check` and `init` fill it too), or
        None when the file cannot be read. The rest of the command line changes no list, so it is not in the key."""
        try:
            written = config.read_bytes() if config is not None else b""
        except OSError:
            return None
        where = str(config.resolve()) if config is not None else ""
        settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("OFFPROMPT_") and k != CACHE_ENV)
        text = json.dumps([_VERSION, __version__, _code(), where, settings])
        digest = hashlib.sha256(text.encode() + b"\0" + written).hexdigest()[:32]
        return cls(cache_dir or cache_directory("front"), digest, config_free=config is None)

    @property
    def path(self) -> Path:
        return self.directory / f"{self.start_key}.json"

    def lists(self) -> dict[str, Any] | None:
        """The lists kept for this start, or None (never kept, or the file is unreadable)."""
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        lists = data.get("lists") if isinstance(data, dict) and data.get("version") == _VERSION else None
        return lists if isinstance(lists, dict) else None

    def save(self, lists: Mapping[str, Any]) -> None:
        """Keep the lists for the next start (written whole or not at all, mode 0600)."""
        tmp: str | None = None
        try:
            private_dir(self.directory)  # the cache root too: it holds the tool lists
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{self.start_key}.", suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                json.dump({"version": _VERSION, "lists": lists}, out)
            os.replace(tmp, self.path)
        except OSError:  # a read-only cache, a full disk: the next start's lists come from the real server
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return
        self._prune()

    def _prune(self) -> None:
        """Drop lists no start has used for a month (an edited config's old ones would never be read again)."""
        import time

        old = time.time() - _UNUSED_SECONDS
        for other in self.directory.glob("*.json"):
            with contextlib.suppress(OSError):
                seen = other.stat()
                if other != self.path and max(seen.st_atime, seen.st_mtime) < old:
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
    #: Every byte read from stdin that the real server reads before the pipe, in order (the answered requests
    #: among them, to be replayed; never a line the prelude refused as invalid).
    read: bytes = b""
    #: The requests answered here, by id: their method and the answer given ("result" or "error"), which the real
    #: server's own answer is checked against and dropped for.
    answered: dict[str | int, dict[str, Any]] = field(default_factory=dict)


def answer_first_requests(
    front: FrontCache, importing: threading.Thread, stdin: int = 0, stdout: int = 1, opening: Opening | None = None
) -> Handoff:
    """Answer the opening from data while `importing` runs; return when it has ended, or at the first request
    answered here no longer (its bytes, and all later ones, are in the handoff's `read`). Stdin closing with every
    request answered ends the process: there is nothing left to do."""
    handoff = Handoff(front)
    if not (_is_pipe(stdin) and _is_pipe(stdout)):
        return handoff
    opening = opening or Opening.load()
    if opening is None:
        return handoff
    answering = _Answering(opening, _lists(front, opening), stdout, handoff.answered)
    buffer = bytearray()
    while importing.is_alive():
        line_end = buffer.find(b"\n")
        if line_end == -1:
            if len(buffer) > _MAX_PRELUDE_LINE:
                break  # the real server's to refuse, under its own limits
            if not _read_some(stdin, buffer):
                if not buffer.strip():
                    os._exit(0)  # the client has gone and every request it sent has its answer
                break
            continue
        line = bytes(buffer[: line_end + 1])
        message = _parse(line[:-1])
        if message is None:
            break
        taken = answering.take(message)
        if taken is False:
            break
        if taken is True:
            handoff.read += line
        del buffer[: line_end + 1]
    handoff.read += bytes(buffer)
    return handoff


def _lists(front: FrontCache, opening: Opening) -> Mapping[str, Any] | None:
    lists = front.lists()
    if lists is None and front.config_free:
        return opening.lists
    return lists


class _Answering:
    """The prelude's part of a session, in the era its first request opens (as the SDK decides it): the handshake
    (`initialize`, then `ping`, `logging/setLevel` and the lists) or 2026-07-28 (`server/discover`, the lists)."""

    def __init__(
        self,
        opening: Opening,
        lists: Mapping[str, Any] | None,
        stdout: int,
        answered: dict[str | int, dict[str, Any]],
    ) -> None:
        self._opening = opening
        self._lists = lists
        self._stdout = stdout
        self._answered = answered
        self._modern: bool | None = None  # the era, once the first request has opened it
        self._version: str | None = None  # the handshake's protocol version, once initialize is answered

    def take(self, message: dict[str, Any]) -> bool | None:
        """True: answered here (or a notification), replayed to the real server; None: refused here as invalid and
        never replayed; False: the real server's, with what follows."""
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if not isinstance(method, str):
            return False  # a response: the real server's
        if _has_lone_surrogate(message):
            if request_id is None and not _has_lone_surrogate(method):
                return False  # a notification: the real server serves it with U+FFFD in its place
            from offprompt import jsonrpc  # only for such a line: the prelude reads others with the standard library

            refused = jsonrpc.invalid_request(message, jsonrpc.lone_surrogate_places(message))
            self._write(refused or _invalid(request_id, "a message holds a lone surrogate, which is no Unicode text"))
            return None
        if request_id is None:
            return self._modern is not None  # a notification: replayed; before any request, the server's
        if request_id in self._answered:
            return False  # an id used again: the real server answers it, and nothing here is mistaken for it
        if self._modern is None:
            self._modern = method != "initialize" and has_envelope(params)
        params = params if isinstance(params, dict) else {} if params is None else None
        if params is None:
            return False
        answer = self._modern_answer(method, params) if self._modern else self._handshake_answer(method, params)
        if answer is None:
            return False
        self._answered[request_id] = {"method": method, **answer}
        self._write({"jsonrpc": "2.0", "id": request_id, **answer})
        return True

    def _handshake_answer(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if has_envelope(params):
            return None  # refused by the real server on a handshake connection
        if method == "initialize":
            result = self._opening.initialize(params) if self._version is None else None
            if result is not None:
                self._version = result["protocolVersion"]
            return None if result is None else {"result": result}
        if method == "ping" and _plain(params):
            return {"result": {}}  # answered before initialize too, as the server does
        if method == "server/discover":  # probed without the 2026 envelope: no such method here, initialize is
            return {"error": dict(self._opening.data["discover_without_envelope"])}
        if self._version is None:
            return None
        if method == "logging/setLevel" and params.get("level") in LEVELS and _plain(params, "level"):
            return {"result": {}}  # the real server applies it to each server as it starts
        return self._list(method, params, self._version)

    def _modern_answer(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        found = self._opening.modern(params)
        if found is None:
            return None
        if found[0] == "error":
            return {"error": found[1]}  # a version the server does not speak, whatever the request
        version = found[1]["version"]
        if method == "server/discover" and _plain(params):
            return {"result": self._opening.discover(version)}
        return self._list(method, params, version)

    def _list(self, method: str, params: dict[str, Any], version: str) -> dict[str, Any] | None:
        if method not in ("tools/list", "prompts/list") or self._lists is None or not _plain(params):
            return None  # a later page (a cursor) is the real server's
        result = self._opening.list_answer(self._lists, method, version)
        return None if result is None else {"result": result}

    def _write(self, message: Mapping[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        view = memoryview(line)
        while view:
            view = view[os.write(self._stdout, view) :]


def _plain(params: Mapping[str, Any], *allowed: str) -> bool:
    """Whether params hold nothing but `allowed` keys and a `_meta` object (a cursor, say, is the server's)."""
    return set(params) <= {"_meta", *allowed} and isinstance(params.get("_meta", {}), dict)


def _invalid(request_id: Any, problem: str) -> dict[str, Any]:
    usable = (
        isinstance(request_id, str | int) and not isinstance(request_id, bool) and not _has_lone_surrogate(request_id)
    )
    error = {"code": INVALID_REQUEST, "message": f"Invalid Request: {problem}"}
    return {"jsonrpc": "2.0", "id": request_id if usable else None, "error": error}


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` (keys included) holds a lone surrogate, which no UTF-8 can carry."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


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


_STOPS = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if sys.platform != "win32" else ())


def exit_on_stop_signals() -> None:
    """From now until the server installs its own handlers, a client that stops offprompt ends it at once: nothing
    is stored or open yet that a stop must close (a signal left ignored, as under nohup, stays ignored)."""
    for stop in _STOPS:
        if signal.getsignal(stop) != signal.SIG_IGN:
            signal.signal(stop, _exit)


def _exit(signum: int, frame: FrameType | None) -> None:
    os._exit(0)
