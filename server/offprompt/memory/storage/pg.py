"""A shared memory's PostgreSQL: a few pooled connections, one schema per memory, outages as clear errors.

psycopg is imported here, on first use, so `offprompt serve` starts as fast without the `postgres` extra
installed. Each memory lives in its own schema (`offprompt_<name>`), so one database holds many memories.
A connection that fails is dropped and the next call connects again: when PostgreSQL comes back, the server
serves again without a restart.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from offprompt.config import redact_dsn
from offprompt.errors import ConfigError, StoreUnavailableError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgDatabase", "schema_name"]

#: Connections kept open for reuse; more are opened when threads need them, and closed after.
POOL_SIZE: Final = 4
CONNECT_TIMEOUT_SECONDS: Final = 5


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
        self._ready = False

    def ensure_schema(self, ddl: str) -> None:
        """Create the memory's schema and tables (once per process; serialised across servers by a lock)."""
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET LOCAL search_path TO "{self.schema}"')
            conn.execute(ddl)

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._psycopg.connect(self._dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
        conn.execute(f'SET search_path TO "{self.schema}"')
        return conn

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection in autocommit mode; PostgreSQL being unreachable raises StoreUnavailableError."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except self._psycopg.OperationalError as exc:
            if conn is not None:
                conn.close()
            conn = None
            raise self.unavailable(exc) from exc
        finally:
            if conn is not None:
                self._give_back(conn)

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
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreUnavailableError(
            f"the shared memory's PostgreSQL ({self.where}) can't be reached: {reason}. Start PostgreSQL (or fix "
            '"postgres" in the offprompt block of the config) and call again: offprompt reconnects by itself.'
        )

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
