"""Half-open HTTP connections cannot starve a real caller (slowloris).

Each attacking socket sends a request line and a Host header, and then nothing. offprompt runs with its
open-file limit at soft = hard = 1024, so raising the soft limit to the hard one (which offprompt does at start)
cannot be what saves it: the cap on connections still waiting for their headers, and the header deadline, must.
"""

from __future__ import annotations

import contextlib
import resource
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ..serving import clean_env, serving
from ..support import offprompt_command
from .test_transports import session_for

pytestmark = pytest.mark.anyio

ATTACKERS = 1_100
FD_LIMIT = 1024


@contextlib.contextmanager
def slow_sockets(url: str, count: int) -> Iterator[list[socket.socket]]:
    parts = urlsplit(url)
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            sock.sendall(f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n".encode())  # and never the rest
            opened.append(sock)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(30)  # bounds a hang: the server's deadline here is 2 s
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


async def test_a_valid_caller_gets_through_while_a_thousand_sockets_send_no_headers(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < ATTACKERS + 200:
        pytest.skip(f"this process may open only {hard} files; the attack needs {ATTACKERS + 200}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, ATTACKERS + 200), hard))
    command = [
        "prlimit",
        f"--nofile={FD_LIMIT}:{FD_LIMIT}",
        "--",
        *offprompt_command(
            "serve", "--transport", "http", "--port", "0", "--data-dir", str(tmp_path / "data"),
            "--header-timeout-seconds", "2",
        ),
    ]  # fmt: skip
    with (
        serving(command, r"offprompt: serving MCP at (\S+)", clean_env()) as served,
        slow_sockets(served.url, ATTACKERS) as attackers,
    ):
        async with session_for(served.url) as session:  # connects after all of them, while they wait
            assert not (await session.call_tool("memory_list", {})).is_error
        assert closed_by_server(attackers[-1])  # the newest was not pushed out: the deadline closes it


def read_response(sock: socket.socket) -> bytes:
    """One whole HTTP/1.1 response with a Content-Length, so nothing of it is left to read."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return data


def test_a_kept_alive_connection_gets_the_header_deadline_for_its_next_request_too(tmp_path: Path) -> None:
    """One quick request, then the next one's headers trickled: uvicorn's keep-alive timer stops at its first
    byte, so only offprompt's deadline can close it."""
    command = offprompt_command(
        "serve", "--transport", "http", "--port", "0", "--data-dir", str(tmp_path / "data"),
        "--header-timeout-seconds", "2",
    )  # fmt: skip
    with serving(command, r"offprompt: serving MCP at (\S+)", clean_env()) as served:
        parts = urlsplit(served.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(f"GET /nothing HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
            first = read_response(sock)
            assert first.startswith(b"HTTP/1.1 ")  # answered, and the connection kept
            sock.sendall(f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n".encode())  # and never the rest
            assert closed_by_server(sock)


def test_headers_past_16_kib_are_refused_and_shorter_ones_served(tmp_path: Path) -> None:
    """h11 capped a request's headers at 16 KiB; httptools has no cap of its own, so offprompt keeps that one: a
    client cannot make the server hold an endless header in memory while its deadline runs."""
    command = offprompt_command("serve", "--transport", "http", "--port", "0", "--data-dir", str(tmp_path / "data"))
    with serving(command, r"offprompt: serving MCP at (\S+)", clean_env()) as served:
        parts = urlsplit(served.url)
        start = f"GET /nothing HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(f"{start}X-Long: {'a' * 10_000}\r\n\r\n".encode())
            assert not read_response(sock).startswith(b"HTTP/1.1 400 ")  # under the cap: routed (404)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            for _ in range(5):  # in pieces, as a slow client sends them: the cap counts every one
                sock.sendall(f"{start if _ == 0 else ''}X-Long-{_}: {'a' * 4_000}\r\n".encode())
            answer = b""
            while chunk := sock.recv(65536):  # to the end: the server closes the connection after its answer
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 400 ")


def test_pipelined_requests_are_all_answered(tmp_path: Path) -> None:
    """Requests sent back to back on one connection, before any answer: each is answered, in order, and the
    connection stays open after the last (the header deadline does not start while one is still pending)."""
    command = offprompt_command("serve", "--transport", "http", "--port", "0", "--data-dir", str(tmp_path / "data"))
    with serving(command, r"offprompt: serving MCP at (\S+)", clean_env()) as served:
        parts = urlsplit(served.url)
        request = f"GET /nothing-{{}} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n"
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall("".join(request.format(n) for n in range(3)).encode())
            data = b""
            while data.count(b"HTTP/1.1 404 ") < 3 or not data.endswith(b"Not Found"):  # however the reads split them
                chunk = sock.recv(65536)
                assert chunk, f"closed after {data.count(b'HTTP/1.1 ')} answers"
                data += chunk
            sock.sendall(request.format(3).encode())
            assert read_response(sock).startswith(b"HTTP/1.1 404 ")
