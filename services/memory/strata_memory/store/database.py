"""Engine set-up, migrations and transactions, run off the event loop in a bounded thread pool.

This module is the one place that knows how each backend keeps concurrent writers apart; the
operations above run the same code on both.

SQLite (the default) runs in WAL mode with ``synchronous=FULL``, so a commit that returned is on disk.
Write transactions start with ``BEGIN IMMEDIATE``: read-modify-write sequences (a tool appending to a
block) are serialised by the database itself and none is lost.

PostgreSQL (``postgresql+psycopg://…``, shared by many replicas) writes at READ COMMITTED and the store
takes row locks (``SELECT … FOR UPDATE``) where it reads what it is about to change: edits of one
block queue on its row, edits of different blocks run side by side. Row locks were chosen over
SERIALIZABLE with retries because the contended case is the common one (many edits of one block):
under SERIALIZABLE most of them would fail and redo their work, under locks they wait their turn.
Two races remain that a lock cannot prevent, and a write transaction is re-run for them (``work`` is
a function of the database alone, so running it again is safe): a deadlock (two paths locking the
same rows in opposite orders) or a serialisation failure, and a unique violation between a
transaction's check and its insert (another replica committed the same label first): re-run, the
check sees the committed row and raises the same typed error as on SQLite. Reads run at REPEATABLE
READ, one snapshot per call, as SQLite's read transactions do. Every PostgreSQL session has a lock
timeout, a statement timeout bounded by the call's deadline and an idle-in-transaction timeout
(``store.postgres_session``), so a stuck replica cannot hold the others' writes for long.

On SQLite, writes sent with ``write_together`` (appends of messages) that queue meanwhile share one
transaction and one commit, a savepoint each (see ``write_together``). What a refused write becomes
for the caller, and which conflicts are re-run, is ``store.failures``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, NullPool, create_engine, event, make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from strata_memory.limits import QUOTA_DEFAULTS
from strata_memory.store import quotas
from strata_memory.store.failures import sqlstate, storage_failure, worth_rerunning
from strata_memory.store.glance import Glances, sqlite_path
from strata_memory.store.postgres_session import SessionLimits
from strata_serving import tracing

T = TypeVar("T")
W = TypeVar("W")

MIGRATIONS = Path(__file__).parent / "migrations"
_MIGRATION_LOCK = 0x5354_5241_5441  # "STRATA": one replica migrates at a time (pg_advisory_xact_lock)
_PROBE_CONNECT_SECONDS = 5
log = logging.getLogger("strata.store")


@dataclass
class _Shared:
    """A write waiting to share a transaction, and what became of it (a result or an error)."""

    work: Callable[[Connection], Any]
    future: asyncio.Future[Any]
    given_up: threading.Event = field(default_factory=threading.Event)  # the caller was cancelled
    result: Any = None
    error: Exception | None = None


class Database:
    """One engine for reads and one for writes over the same URL, plus the executor they run in."""

    def __init__(
        self,
        url: str,
        *,
        max_workers: int = 4,
        busy_timeout_ms: int = 10_000,
        limits: SessionLimits | None = None,
        quota_defaults: Mapping[str, int] | None = None,
    ) -> None:
        self.url = url
        self.backend = make_url(url).get_backend_name()
        self.is_sqlite = self.backend == "sqlite"
        self.limits = limits if limits is not None else SessionLimits()
        self.quota_defaults = {**QUOTA_DEFAULTS, **(quota_defaults or {})}
        self.quotas_enforced = True
        """Whether writes are checked against the quotas (``store.quotas``); only a schema from before
        migration 0013, which tests of older migrations build, lacks the tables."""
        if self.is_sqlite:
            _ensure_parent_dir(url)
        else:
            url = self.limits.session_url(url)
        self._reader = self._engine(url, immediate=False, busy_timeout_ms=busy_timeout_ms)
        self._writer = self._engine(url, immediate=True, busy_timeout_ms=busy_timeout_ms)
        self._prober = (
            self._reader
            if self.is_sqlite
            else create_engine(
                url, poolclass=NullPool, connect_args={"connect_timeout": _PROBE_CONNECT_SECONDS}
            )
        )
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="strata-db")
        self._write_lock = threading.RLock()  # SQLite: this process's writers queue here (``writing``)
        self._busy_timeout_s = busy_timeout_ms / 1000
        self._sharing: list[_Shared] = []  # writes for the next shared transaction (write_together)
        self._committer: asyncio.Task[None] | None = None
        self.glances = Glances(sqlite_path(url) if self.is_sqlite else None)
        """Small reads on the event loop where the page cache makes them safe (``store.glance``)."""

    def _engine(self, url: str, *, immediate: bool, busy_timeout_ms: int) -> Engine:
        if self.is_sqlite:
            engine = create_engine(url, hide_parameters=True)  # errors and logs never carry memory text
            _configure_sqlite(engine, busy_timeout_ms=busy_timeout_ms)
            return engine
        return create_engine(
            url,
            hide_parameters=True,
            pool_pre_ping=True,  # a server restart costs one reconnect, not one failed call
            isolation_level="READ COMMITTED" if immediate else "REPEATABLE READ",
        )

    def migrate(self) -> None:
        """Bring the schema to the newest revision (idempotent; replicas starting at once take turns)."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self._writer.connect() as connection:
            if self.is_sqlite:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                SessionLimits.lift(connection)
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        with self._reader.connect() as connection, connection.begin():
            if self.is_sqlite:
                connection.exec_driver_sql("BEGIN")
            else:
                self.limits.bound_to_deadline(connection)
            yield connection

    @contextlib.contextmanager
    def writing(self) -> Iterator[Connection]:
        """A transaction that holds the write lock from its first statement and commits on exit.

        On SQLite this process's writers first queue on an in-process lock: SQLite makes a writer that
        finds its lock taken sleep and retry, in steps growing to 100 ms, so with a few dozen writers
        (a stream of small appends, the outbox's claims and settlements) most of the waiting was
        sleeping past the moment the lock came free (measured: bench/perf/findings.md). The queue hands
        the lock over at once; another process's writers are still kept apart by SQLite's own lock."""
        with self._write_queue(), self._writer.connect() as connection, connection.begin():
            if self.is_sqlite:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                self.limits.bound_to_deadline(connection)
            yield connection
            if self.quotas_enforced:
                quotas.enforce(connection, self.quota_defaults)  # raising rolls the transaction back

    @contextlib.contextmanager
    def _write_queue(self) -> Iterator[None]:
        if not self.is_sqlite:
            yield
            return
        # Re-entrant: a transaction opened inside another on the same thread meets SQLite's lock as
        # before. Bounded like SQLite's wait: past it the transaction goes on to SQLite's busy timeout.
        queued = self._write_lock.acquire(timeout=self._busy_timeout_s)
        try:
            yield
        finally:
            if queued:
                self._write_lock.release()

    async def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a read transaction on the pool."""
        return await self._run(self._in_reading, work)

    async def write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction on the pool; it is committed before this returns.

        ``work`` may run more than once (see the module's docstring): it must act on the database only.
        If the caller is cancelled (its call's deadline passed, its client cancelled) before the
        transaction commits, it is rolled back: a call that failed while its write waited for the store
        (SQLite's lock, a PostgreSQL row lock) does not commit it afterwards, when a retry would
        repeat it. Only a cancellation in the instant of the commit itself can still miss it.
        """
        given_up = threading.Event()
        try:
            return await self._run(functools.partial(self._in_writing, given_up=given_up), work)
        except asyncio.CancelledError:
            given_up.set()
            raise

    async def write_together(self, work: Callable[[Connection], T]) -> T:
        """As :meth:`write`, but on SQLite ``work`` may share its transaction and commit with others.

        Writes that arrive while a shared transaction runs wait for it and then run together, each in
        a savepoint of one transaction, committed once: a stream of small appends pays one fsync per
        group instead of one per append. Nothing waits for company: a write that finds no transaction
        running starts one alone. Each caller is answered after the commit that holds its write. A
        ``work`` that raises rolls back its own savepoint and gets its error; the others go on. If the
        store itself fails (a database error inside a write, or the commit), the transaction is rolled
        back and every write of the group runs again in a transaction of its own, so each gets the
        answer it would have had alone. A write whose caller is cancelled before the commit is rolled
        back, as in :meth:`write`. On PostgreSQL this is :meth:`write`.
        """
        if not self.is_sqlite:
            return await self.write(work)
        shared = _Shared(work, asyncio.get_running_loop().create_future())
        self._sharing.append(shared)
        if self._committer is None or self._committer.done():
            self._committer = asyncio.create_task(self._commit_shared())
        try:
            result: T = await shared.future
        except asyncio.CancelledError:
            shared.given_up.set()
            raise
        return result

    async def _commit_shared(self) -> None:
        """Run the waiting writes together, group after group, until none is waiting."""
        while self._sharing:
            group, self._sharing = self._sharing, []
            try:
                await self._run(self._in_shared, group)
            except Exception as failure:  # noqa: BLE001  # nothing committed: each caller gets it
                for shared in group:
                    shared.result, shared.error = None, failure
            except BaseException:  # cancelled: so are the callers, as a cancelled write() would be
                for shared in (*group, *self._sharing):
                    shared.future.cancel()
                raise
            for shared in group:
                if shared.future.done():  # the caller went away; its write stands or not, as in write()
                    continue
                if shared.error is None:
                    shared.future.set_result(shared.result)
                elif isinstance(shared.error, DBAPIError) and (translated := storage_failure(shared.error)):
                    shared.future.set_exception(translated)
                else:
                    shared.future.set_exception(shared.error)

    def _in_shared(self, group: Sequence[_Shared]) -> None:
        """One transaction, a savepoint per write; on a store failure, each write alone instead, and
        so too when a caller gave up after its savepoint was released (only then can its write alone be
        rolled back). Outcomes are recorded only once the transaction they came from has committed."""
        if len(group) > 1:
            try:
                outcomes = self._together(group)
            except (DBAPIError, WriteGivenUp):
                log.info("a shared write transaction was rolled back; %d writes run alone", len(group))
            else:
                for shared, (result, error) in zip(group, outcomes, strict=True):
                    shared.result, shared.error = result, error
                return
        for shared in group:
            try:
                shared.result = self._in_writing(shared.work, given_up=shared.given_up)
            except Exception as error:  # noqa: BLE001  # raised to its own caller
                shared.error = error

    def _together(self, group: Sequence[_Shared]) -> list[tuple[Any, Exception | None]]:
        with self.writing() as connection:
            outcomes = [self._in_savepoint(connection, shared) for shared in group]
            kept = [shared for shared, (_, error) in zip(group, outcomes, strict=True) if error is None]
            if any(shared.given_up.is_set() for shared in kept):
                raise WriteGivenUp  # rolls the transaction back
        return outcomes

    def _in_savepoint(self, connection: Connection, shared: _Shared) -> tuple[Any, Exception | None]:
        """The write's result, or its error with its changes rolled back (also when its caller gave
        up); a store failure propagates (the whole transaction is then rolled back, see ``_in_shared``)."""
        savepoint = connection.begin_nested()
        try:
            result = shared.work(connection)
            if self.quotas_enforced:
                quotas.enforce(connection, self.quota_defaults)
        except DBAPIError:
            raise
        except Exception as error:  # noqa: BLE001  # raised to its own caller
            savepoint.rollback()
            return None, error
        if shared.given_up.is_set():
            savepoint.rollback()
            return None, WriteGivenUp()
        savepoint.commit()
        return result, None

    def _in_reading(self, work: Callable[[Connection], T]) -> T:
        with self.reading() as connection:
            return work(connection)

    def _in_writing(self, work: Callable[[Connection], T], *, given_up: threading.Event | None = None) -> T:
        run = 1
        while True:
            try:
                with self.writing() as connection:
                    result = work(connection)
                    if given_up is not None and given_up.is_set():
                        raise WriteGivenUp  # rolls the transaction back
                    return result
            except DBAPIError as failure:
                if not worth_rerunning(failure, run):
                    raise
                log.info(
                    "store transaction re-run after a concurrent conflict (sqlstate %s)", sqlstate(failure)
                )
                run += 1

    async def _run(self, runner: Callable[[W], T], work: W) -> T:
        loop = asyncio.get_running_loop()
        mode = "read" if runner == self._in_reading else "write"
        try:
            with tracing.child_span("store.transaction", mode=mode):
                call = contextvars.copy_context()  # the store thread sees the call's deadline
                return await loop.run_in_executor(self._executor, call.run, functools.partial(runner, work))
        except DBAPIError as failure:
            translated = storage_failure(failure)
            if translated is None:
                raise
            log.warning("store refused a transaction: %s", translated.reason)
            raise translated from failure

    def probe(self) -> None:
        """Raise unless the store answers ``SELECT 1`` on a new connection (PostgreSQL: never a pooled
        one, whose link may be the one that froze). Blocking; the caller bounds how long it waits."""
        with self._prober.connect() as connection:
            connection.execute(text("SELECT 1"))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.glances.close()
        self._reader.dispose()
        self._writer.dispose()
        self._prober.dispose()


class WriteGivenUp(Exception):  # not an error: the caller left before the commit
    """The caller of a write was cancelled before it committed; the transaction was rolled back."""


def _ensure_parent_dir(url: str) -> None:
    path = url.split(":///", 1)[-1]
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def _configure_sqlite(engine: Engine, *, busy_timeout_ms: int) -> None:
    """WAL, durable commits, foreign keys and a busy timeout on every connection.

    The driver's own transaction handling is off (``isolation_level = None``): ``reading`` and
    ``writing`` send ``BEGIN`` / ``BEGIN IMMEDIATE`` themselves. A connection-level ``begin`` event
    would do the same, but any such event makes SQLAlchemy dispatch its execution events around every
    statement (measured: bench/perf/findings.md).
    """

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.close()
