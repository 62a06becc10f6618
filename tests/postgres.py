"""A real PostgreSQL for the shared-memory tests (marker `postgres`), and the memory opened on it as each server would.

`.ci/run` starts one from Debian's packages and exports its DSN as OFFPROMPT_TEST_POSTGRES. Without it, the
fixture starts a throw-away cluster in a temporary directory with `initdb`/`pg_ctl` if they are installed
(as the `postgres` user when run as root, since PostgreSQL refuses to run as root); else the tests are skipped,
and failed under CI=true, where a skip would pass without testing the shared memory.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

from .chroma_server import ChromaServer

ENV = "OFFPROMPT_TEST_POSTGRES"


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in ("/usr/local/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)):
        path = Path(candidate) / name
        if path.exists():
            return str(path)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A DSN of a PostgreSQL database the test may create schemas in."""
    if dsn := os.environ.get(ENV):
        yield dsn
        return
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        message = f"no PostgreSQL: set {ENV} to a DSN, or install PostgreSQL (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; .ci/run starts one", pytrace=False)
        pytest.skip(message)
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="offprompt-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres") if "postgres" in {p.pw_name for p in pwd.getpwall()} else None
        if user is None:
            pytest.skip("running as root without a postgres user to run PostgreSQL as")
        os.chown(directory, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data, port = directory / "data", _free_port()
    subprocess.run([*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], check=True, capture_output=True)
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*run_as, pg_ctl, "-D", str(data), "-o", options, "-l", str(directory / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def memory_name() -> str:
    """A memory name (so a schema) of the test's own, in the shared database."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def open_memory(tmp_path: Path, postgres_dsn: str, memory_name: str) -> Iterator[Callable[..., TaskMemory]]:
    """Opens the test's shared memory as a server would, each time with a data directory of its own."""
    opened: list[TaskMemory] = []

    def open_one(index: bool = True, **overrides: object) -> TaskMemory:
        settings = MemorySettings(
            name=memory_name, data_dir=tmp_path / f"server{len(opened)}", postgres=postgres_dsn, chroma="ephemeral"
        )
        memory = TaskMemory.open(replace(settings, **overrides), resume_indexing=index)  # type: ignore[arg-type]
        opened.append(memory)
        return memory

    yield open_one
    for memory in opened:
        memory.close()


@pytest.fixture
def chroma_url(chroma_server: ChromaServer) -> str:
    """A real `chroma run` on a free loopback port: where a shared memory's vectors go."""
    return chroma_server.url
