"""Engine set-up, migrations and transactions, run off the event loop in a bounded thread pool.

SQLite (the default) runs in WAL mode with ``synchronous=FULL``, so a commit that returned is on disk.
Write transactions start with ``BEGIN IMMEDIATE``: read-modify-write sequences (a tool appending to a
block) are serialised by the database itself and none is lost. On PostgreSQL the same code takes row
locks (``SELECT … FOR UPDATE``) where it reads what it is about to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from strata_serving.errors import ResourceExhausted, StrataError, Unavailable

T = TypeVar("T")

_MIGRATIONS = Path(__file__).parent / "migrations"
log = logging.getLogger("strata.store")


class Database:
    """One engine for reads and one for writes over the same URL, plus the executor they run in."""

    def __init__(self, url: str, *, max_workers: int = 4, busy_timeout_ms: int = 10_000) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            _ensure_parent_dir(url)
        self._reader = self._engine(url, immediate=False, busy_timeout_ms=busy_timeout_ms)
        self._writer = self._engine(url, immediate=True, busy_timeout_ms=busy_timeout_ms)
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="strata-db")

    def _engine(self, url: str, *, immediate: bool, busy_timeout_ms: int) -> Engine:
        engine = create_engine(url, hide_parameters=True)  # errors and logs never carry memory text
        if self.is_sqlite:
            _configure_sqlite(engine, immediate=immediate, busy_timeout_ms=busy_timeout_ms)
        return engine

    def migrate(self) -> None:
        """Bring the schema to the newest revision (idempotent)."""
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with self._writer.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        with self._reader.connect() as connection, connection.begin():
            yield connection

    @contextlib.contextmanager
    def writing(self) -> Iterator[Connection]:
        """A transaction that holds the write lock from its first statement and commits on exit."""
        with self._writer.connect() as connection, connection.begin():
            yield connection

    async def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a read transaction on the pool."""
        return await self._run(self._in_reading, work)

    async def write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction on the pool; it is committed before this returns."""
        return await self._run(self._in_writing, work)

    def _in_reading(self, work: Callable[[Connection], T]) -> T:
        with self.reading() as connection:
            return work(connection)

    def _in_writing(self, work: Callable[[Connection], T]) -> T:
        with self.writing() as connection:
            return work(connection)

    async def _run(
        self, runner: Callable[[Callable[[Connection], T]], T], work: Callable[[Connection], T]
    ) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(runner, work))
        except OperationalError as failure:
            translated = storage_failure(failure)
            if translated is None:
                raise
            log.warning("store refused a transaction: %s", translated.reason)
            raise translated from failure

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self._reader.dispose()
        self._writer.dispose()


class StoreFull(ResourceExhausted):
    default_reason = "STORE_FULL"


class StoreUnavailable(Unavailable):
    default_reason = "STORE_UNAVAILABLE"


def storage_failure(failure: OperationalError) -> StrataError | None:
    """A clear, retryable status for a store that cannot take writes (nothing was changed), or None.

    SQLite reports a full disk as SQLITE_FULL, a read-only file or folder as SQLITE_READONLY*, a
    failing disk as SQLITE_IOERR*, and a lock held past ``busy_timeout`` as SQLITE_BUSY.
    """
    name = str(getattr(failure.orig, "sqlite_errorname", ""))
    if name == "SQLITE_FULL":
        return StoreFull("the memory store's disk is full: the write was not made; free space and retry")
    if name.startswith(("SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_BUSY")):
        return StoreUnavailable(
            f"the memory store cannot take writes ({name}): the write was not made; "
            "check that the data folder is writable and retry",
            metadata={"sqlite_error": name},
        )
    return None


def _ensure_parent_dir(url: str) -> None:
    path = url.split(":///", 1)[-1]
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def _configure_sqlite(engine: Engine, *, immediate: bool, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # let SQLAlchemy's begin event issue BEGIN itself
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
