"""Outbox wake-ups across replicas: PostgreSQL ``LISTEN``/``NOTIFY`` on one channel.

A transaction that writes index jobs also sends ``NOTIFY strata_index_jobs`` (:func:`announce_jobs`;
PostgreSQL delivers it only if the transaction commits). Each replica keeps one connection listening
on the channel (:class:`JobNotices`) and wakes its outbox worker on every notice, so a job written
through one replica is picked up by an idle worker of any replica at once instead of at its next
poll. The worker keeps polling as well: a notice is a hint, never the only way a job is found. With
SQLite (one host) there is nothing to listen to and both are no-ops.

Stopping never cancels a psycopg call (a cancelled query makes psycopg send a cancel request and
wait up to twice 5 s): the listener waits for notices in slices of ``WAIT_SLICE_SECONDS`` and checks
a stop flag between them, then closes its connection itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from sqlalchemy import func, make_url, select
from sqlalchemy.engine import Connection

CHANNEL = "strata_index_jobs"
_NOTIFY = select(func.pg_notify(CHANNEL, func.current_schema()))  # one channel per database: say whose
WAIT_SLICE_SECONDS = 0.25
"""Longest wait for notices before the stop flag is checked again: the most a stop waits for."""
_CONNECT_TIMEOUT_SECONDS = 5
_RECONNECT_SECONDS = 1.0
_STOP_SECONDS = 10.0
log = logging.getLogger("strata.store")


def announce_jobs(conn: Connection) -> None:
    """Tell every replica's outbox worker that jobs are waiting, once this transaction commits."""
    if conn.dialect.name == "postgresql":
        conn.execute(_NOTIFY)


class JobNotices:
    """Calls ``wake`` whenever any replica commits index jobs (PostgreSQL); does nothing on SQLite."""

    def __init__(self, url: str, wake: Callable[[], None]) -> None:
        parsed = make_url(url)
        self._listens = parsed.get_backend_name() == "postgresql"
        self._conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        self._wake = wake
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.listening = asyncio.Event()
        """Set while the LISTEN connection is open (tests wait for it before writing)."""

    def start(self) -> None:
        if self._listens and self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self._listen(), name="strata-job-notices")

    async def stop(self) -> None:
        """Ask the listener to end and wait until it closed its connection (within a slice of
        waiting, a connect timeout at worst); past ``_STOP_SECONDS`` it is left behind, logged."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping.set()
        done, _ = await asyncio.wait({task}, timeout=_STOP_SECONDS)
        if not done:
            log.error("outbox notices: the listener did not stop within %.0f s; left behind", _STOP_SECONDS)
            task.cancel()
        elif not task.cancelled() and task.exception() is not None:
            log.error("outbox notices: the listener failed", exc_info=task.exception())

    async def _listen(self) -> None:
        while not self._stopping.is_set():
            try:
                await self._listen_once()
            except (psycopg.Error, OSError) as failure:
                log.warning("outbox notices: listening failed, retrying: %s", type(failure).__name__)
            self.listening.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_RECONNECT_SECONDS):
                    await self._stopping.wait()

    async def _listen_once(self) -> None:
        conn = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_SECONDS
        )
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            row = await (await conn.execute("SELECT current_schema()")).fetchone()
            schema = row[0] if row else ""
            self.listening.set()
            self._wake()  # jobs written while nobody listened
            while not self._stopping.is_set():
                async for notice in conn.notifies(timeout=WAIT_SLICE_SECONDS):
                    if notice.payload == schema:  # not another store's jobs in the same database
                        self._wake()
        finally:
            self.listening.clear()
            await conn.close()
