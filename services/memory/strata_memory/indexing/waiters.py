"""The calls waiting until their writes are searchable (``wait_searchable``), and how they are released.

A write's index jobs are waited for by job id. Rules:
- The worker that completes a job tells its waiters (:meth:`DeliveryWaiters.release`), so a waiter
  reads nothing from the store while this process's worker delivers for it.
- Jobs another replica's worker delivered (or settled before the waiter registered) are found by
  one read of the store per poll interval for all waiters together, however many calls wait; a
  waiter whose time runs out reads the store once more itself.
- A job id can be reused (SQLite reuses ids once the table is empty), so a settlement or a poll
  releases only the waiters registered before it started: a later one may wait for a newer job
  with the same id, and hears of it from its own delivery or the next poll.
- A waiter that returned, delivered or not, is forgotten at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from strata_memory.store import index_jobs
from strata_memory.store.database import Database

log = logging.getLogger("strata.memory.outbox")


@dataclass(slots=True, eq=False)
class _Waiter:
    """One ``wait_delivered`` call: the jobs it still waits for, and the event set once there are none."""

    remaining: set[int]
    order: int
    done: asyncio.Event = field(default_factory=asyncio.Event)


class DeliveryWaiters:
    """Who waits for which index jobs; released by the worker's settlements and by a shared poll."""

    def __init__(self, db: Database, poll_seconds: float) -> None:
        self._db = db
        self._poll_seconds = poll_seconds
        self._waiting: dict[int, list[_Waiter]] = {}  # job id -> wait_delivered calls waiting for it
        self.registered = 0
        """Waiters registered so far: each waiter's order; a settlement or poll releases those below it."""
        self._poller: asyncio.Task[None] | None = None

    def waited_for(self) -> list[int]:
        """The job ids some call is waiting for now."""
        return list(self._waiting)

    async def wait(self, job_ids: Sequence[int], within: float | None) -> bool:
        """Wait until every job of ``job_ids`` was acknowledged; False if ``within`` seconds passed first."""
        ids = list(job_ids)
        if not ids:
            return True
        waiter = _Waiter(set(ids), self.registered)
        self.registered += 1
        for job_id in waiter.remaining:
            self._waiting.setdefault(job_id, []).append(waiter)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll(), name="strata-outbox-waiters")
        try:
            async with asyncio.timeout(within):
                await waiter.done.wait()
                return True
        except TimeoutError:
            return waiter.done.is_set() or not await self._db.read(lambda conn: index_jobs.pending(conn, ids))
        finally:
            self._forget(waiter)

    def release(self, done: Sequence[int], registered_before: int) -> int:
        """These jobs were acknowledged and deleted by a settlement that started when
        ``registered_before`` waiters had registered: release the waiters among those whose jobs are
        now all done, and return how many were released."""
        released = 0
        for job_id in done:
            for waiter in self._waiting.pop(job_id, []):
                if waiter.order >= registered_before:
                    self._waiting.setdefault(job_id, []).append(waiter)
                    continue
                waiter.remaining.discard(job_id)
                if not waiter.remaining:
                    waiter.done.set()
                    released += 1
        return released

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None

    async def _poll(self) -> None:
        """Every poll interval while calls wait: read which of their jobs are still pending and release
        the waiters (registered before the read started) none of whose jobs is."""
        while self._waiting:
            await asyncio.sleep(self._poll_seconds)
            registered_before = self.registered
            waited_for = list(self._waiting)
            try:
                pending = await self._db.read(functools.partial(index_jobs.still_pending, job_ids=waited_for))
            except Exception:  # the store is away: the waiters wait on, and the next poll tries again
                log.warning("could not read the outbox for %d waiting calls", len(waited_for), exc_info=True)
                continue
            for job_id in waited_for:
                if job_id in pending:
                    continue
                for waiter in list(self._waiting.get(job_id, [])):
                    if waiter.order < registered_before:
                        waiter.remaining.discard(job_id)
                        if not waiter.remaining:
                            waiter.done.set()

    def _forget(self, waiter: _Waiter) -> None:
        for job_id in waiter.remaining:
            waiting = self._waiting.get(job_id, [])
            if waiter in waiting:
                waiting.remove(waiter)
            if not waiting:
                self._waiting.pop(job_id, None)
