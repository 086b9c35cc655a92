"""Small SQLite reads on the event loop, where the page cache makes them safe; None where it may not.

A read in the store's thread pool pays a hop there and back (the submit, the worker's wake-up, the
loop's wake-up through its self-pipe: about a quarter of a GetBlock's server time, bench/perf/
findings.md). A *glance* is one small statement (a few index pages: the ids, versions and write
times a reply is keyed by) run on the loop itself over a connection of its own, for a reply cached
under that key. It must never stall the loop, so it runs only when the pages it reads are very
likely in memory, and the caller reads on the pool otherwise:

- **Warm keys only.** A glance runs for a key whose full read (on the pool) or glance finished in the
  last ``warm_seconds``: those reads touched the same index and table pages moments ago, so they are
  in SQLite's or the OS's page cache; a first read, or one after a quiet spell, goes to the pool.
- **A glance that waited for the disk pauses all of them.** Each glance is timed, and the blocks its
  thread read from storage are counted (``getrusage(RUSAGE_THREAD).ru_inblock``, ~2 us); one over
  ``slow_seconds`` that read from storage (a page that came from disk after all: memory pressure, a
  cold file) sends every read to the pool for ``pause_seconds``. The stall this bounds is one glance:
  a few pages (bench/perf/glance_cold.py: 6 page reads, 16 KiB, p50 2.8 ms on this VM's disk). A
  glance that was slow without touching the disk (the loop's thread preempted on a busy machine)
  pauses nothing: a read on the pool would have waited for the CPU as long. Where the count is not
  available, slowness alone pauses.
- **No waiting for locks.** The connection has no busy timeout: a glance that meets a lock (a WAL
  reset by a checkpoint, recovery after a crash) fails at once and the caller reads on the pool.
  In WAL mode readers never wait for writers otherwise.

The connection is opened read-only (``mode=ro``, ``query_only``) and in autocommit: each glance is one
statement, one implicit read transaction, so it sees the latest commit of any connection or process.
PostgreSQL has no glances (every read crosses the network): :meth:`Glances.run` returns None.
"""

from __future__ import annotations

import logging
import resource
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect

T = TypeVar("T")
log = logging.getLogger("strata.store")

WARM_SECONDS = 30.0
SLOW_SECONDS = 0.002
PAUSE_SECONDS = 5.0
MAX_WARM_KEYS = 65_536

Probe = Callable[[sqlite3.Connection], T]


class Glances:
    """Glances over one SQLite file (``path``), or none (``path`` None: PostgreSQL, ``:memory:``)."""

    def __init__(
        self,
        path: str | None,
        *,
        warm_seconds: float = WARM_SECONDS,
        slow_seconds: float = SLOW_SECONDS,
        pause_seconds: float = PAUSE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._warm_seconds = warm_seconds
        self._slow_seconds = slow_seconds
        self._pause_seconds = pause_seconds
        self._clock = clock
        self._connection: sqlite3.Connection | None = None
        self._warm: OrderedDict[Hashable, float] = OrderedDict()
        self._lock = threading.Lock()  # ``warm`` is also called from the store's threads
        self._paused_until = 0.0
        self.ran = 0
        self.declined = 0
        self.slow = 0

    @property
    def enabled(self) -> bool:
        return self._path is not None

    def warm(self, key: Hashable) -> None:
        """``key``'s pages were just read in full (on the pool): glances at it may run for a while."""
        if self._path is None:
            return
        with self._lock:
            self._warm[key] = self._clock()
            self._warm.move_to_end(key)
            while len(self._warm) > MAX_WARM_KEYS:
                self._warm.popitem(last=False)

    def run(self, key: Hashable, probe: Probe[T]) -> T | None:
        """``probe``'s result, run here and now on the glance connection, or None when it should not
        run here (not warm, paused after a slow glance, a lock met, an error): read on the pool then."""
        if self._path is None:
            return None
        now = self._clock()
        with self._lock:
            seen = self._warm.get(key)
            if seen is None or now - seen > self._warm_seconds or now < self._paused_until:
                self.declined += 1
                return None
        from_disk = _blocks_read()
        start = time.perf_counter()
        try:
            result = probe(self._open())
        except sqlite3.Error as error:  # a lock (no busy timeout), or anything else: the pool reads
            log.debug("glance declined: %s", error)
            self.declined += 1
            return None
        took = time.perf_counter() - start
        self.ran += 1
        if took > self._slow_seconds and (from_disk is None or _blocks_read() != from_disk):
            self.slow += 1
            with self._lock:
                self._paused_until = self._clock() + self._pause_seconds
            log.info(
                "a glance took %.1f ms: reads go to the store's threads for %.0f s",
                took * 1e3,
                self._pause_seconds,
            )
            return result
        self.warm(key)
        return result

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            assert self._path is not None
            uri = Path(self._path).resolve().as_uri() + "?mode=ro"
            connection = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=0
            )
            connection.execute("PRAGMA query_only=1")
            connection.execute("PRAGMA busy_timeout=0")
            self._connection = connection
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _blocks_read() -> int | None:
    """Blocks this thread has read from storage so far (Linux), None where that is not counted."""
    if _RUSAGE_THREAD is None:
        return None
    return resource.getrusage(_RUSAGE_THREAD).ru_inblock


_RUSAGE_THREAD: int | None = getattr(resource, "RUSAGE_THREAD", None)


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///…`` URL; None for PostgreSQL and in-memory databases."""
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[-1].split("?", 1)[0]
    return None if path in ("", ":memory:") else path


class Statement:
    """A SQLAlchemy statement compiled once for SQLite, run on a glance's raw connection with named
    parameters (the text is SQLAlchemy's own, so it follows the schema)."""

    def __init__(self, statement: Any) -> None:
        compiled = statement.compile(dialect=sqlite_dialect())
        self._sql = str(compiled)
        self._names = tuple(compiled.positiontup or ())
        # Literals SQLAlchemy bound itself (``coalesce(sum(...), 0)``'s 0), by their generated names.
        self._fixed = {
            name: bind.effective_value
            for name, bind in ((name, compiled.binds[name]) for name in self._names)
            if not bind.required and bind.callable is None and bind.value is not None
        }
        self.columns = tuple(column.key for column in statement.selected_columns)

    def rows(self, connection: sqlite3.Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        given = {**self._fixed, **params}
        return connection.execute(self._sql, tuple(given[name] for name in self._names)).fetchall()
