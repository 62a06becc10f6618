"""A shared memory's PostgreSQL: a bounded pool of checked connections, one schema per memory, clear errors.

psycopg is imported here, on first use, so `offprompt serve` starts as fast without the `postgres` extra
installed. Each memory lives in its own schema (`offprompt_<name>`), so one database holds many memories.

The pool is bounded (`MAX_CONNECTIONS`, a call waits for a free one) and checks a connection before handing it
out, as psycopg_pool's `check_connection` does: after PostgreSQL restarts, its pooled connections are dead, and
the first call after it is served on a fresh one instead of failing with "terminating connection due to
administrator command". psycopg_pool itself is not used: its `getconn` waits out its timeout while PostgreSQL
is down and then says only "couldn't get a connection", where a call here fails at once with the reason.

A connection that fails is dropped and the next call connects again: when PostgreSQL comes back, the server
serves again without a restart. Credentials PostgreSQL refuses are not an outage: they say to fix the DSN.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from offprompt.config import redact_dsn
from offprompt.errors import ConfigError, CredentialsRefusedError, StoreUnavailableError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgDatabase", "schema_name"]

#: Connections kept open for reuse once a call is done with them.
POOL_SIZE: Final = 4
#: Connections open at once, at most: a call beyond them waits for one to be given back.
MAX_CONNECTIONS: Final = 12
#: How long a call waits for a free connection before it fails as busy.
CHECKOUT_WAIT_SECONDS: Final = 30.0
CONNECT_TIMEOUT_SECONDS: Final = 5
#: SQLSTATEs and message parts of a refused login (wrong password, no such role or database, no pg_hba line).
_REFUSED_STATES: Final = frozenset({"28000", "28P01", "3D000"})
_REFUSED_WORDS: Final = (
    "password authentication failed",
    "authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
    "password is required",
    "no password supplied",
)


def schema_name(memory_name: str) -> str:
    """The memory's schema: `offprompt_<name>`, cut with a hash suffix to PostgreSQL's 63-byte identifiers."""
    name = f"offprompt_{memory_name}"
    if len(name) > 63:
        name = f"{name[:50]}_{hashlib.sha1(memory_name.encode()).hexdigest()[:12]}"
    return name


class PgDatabase:
    """Connections to one memory's schema; `transaction()` and `connection()` hand one out per use."""

    def __init__(self, dsn: str, memory_name: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                '"postgres" is set in the offprompt block but the PostgreSQL driver is not installed: '
                "pip install 'offprompt[postgres]' (psycopg 3), or remove \"postgres\" to use the embedded memory"
            ) from None
        self._psycopg = psycopg
        self._dsn = dsn
        self.schema = schema_name(memory_name)
        self.where = redact_dsn(dsn)
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def ensure_schema(self, ddl: str) -> None:
        """Create the memory's schema and tables (once per process; serialised across servers by a lock)."""
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET LOCAL search_path TO "{self.schema}"')
            conn.execute(ddl)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = self._psycopg.connect(self._dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
        except self._psycopg.OperationalError as exc:
            if _refused(exc):
                raise self.refused(exc) from None
            raise
        conn.execute(f'SET search_path TO "{self.schema}"')
        return conn

    def _checked_out(self) -> psycopg.Connection[Any]:
        """A pooled connection that answers, else a fresh one; dead ones (PostgreSQL restarted) are dropped."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect()
            try:
                conn.execute("")  # a round trip: an empty query, as psycopg_pool's check_connection sends
                return conn
            except self._psycopg.Error:
                conn.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection in autocommit mode; PostgreSQL being unreachable raises StoreUnavailableError."""
        if not self._slots.acquire(timeout=CHECKOUT_WAIT_SECONDS):
            raise StoreUnavailableError(
                f"all {MAX_CONNECTIONS} connections to the shared memory's PostgreSQL ({self.where}) stayed busy "
                f"for {CHECKOUT_WAIT_SECONDS:.0f} s: call again"
            )
        conn = None
        try:
            conn = self._checked_out()
            yield conn
        except self._psycopg.OperationalError as exc:
            if conn is not None:
                conn.close()
            conn = None
            raise self.unavailable(exc) from exc
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.connection() as conn, conn.transaction():
            yield conn

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        idle = conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE
        with self._lock:
            if idle and not conn.closed and len(self._idle) < POOL_SIZE:
                self._idle.append(conn)
                return
        conn.close()

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"the shared memory's PostgreSQL ({self.where}) can't be reached: {_reason(exc)}. Start PostgreSQL "
            "and call again: offprompt connects again by itself, with no restart."
        )

    def refused(self, exc: BaseException) -> CredentialsRefusedError:
        return CredentialsRefusedError(
            f"the shared memory's PostgreSQL ({self.where}) refused offprompt's login: {_reason(exc)}. Fix the "
            'user, password or database name in "postgres" in the offprompt block of the config (or the '
            "variable it names): a restart will not help until the DSN is right."
        )

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _reason(exc: BaseException) -> str:
    """The error's last meaningful line: libpq puts the server's FATAL after "connection to server … failed"."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _refused(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in _REFUSED_STATES:
        return True
    text = str(exc)
    return "FATAL" in text and any(words in text for words in _REFUSED_WORDS)
