"""Stopping the outbox worker always ends it, even when a wake-up lands in the same instant.

This is why a PostgreSQL-backed server's shutdown hung now and then once the LISTEN connection was
started (it wakes the worker when it connects and on every notice): on Python 3.11
``asyncio.wait_for`` returns the inner result when its task is cancelled just as the inner wait
completes, dropping the cancellation, so the idle worker went back to waiting and ``stop()`` waited
for it forever. The store is a real SQLite file; nothing is delivered (there are no jobs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sqlalchemy.engine import Connection

from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store.database import Database
from tests.hermetic import unreachable_address

T = TypeVar("T")
STOP_WITHIN_SECONDS = 10.0  # a hang detector: the stop itself is immediate


class ClaimsSeen(Database):
    """The real store, announcing each finished write transaction (the worker's claim)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.claimed = asyncio.Event()

    async def write(self, work: Callable[[Connection], T]) -> T:
        result = await super().write(work)
        self.claimed.set()
        return result


async def test_a_wake_up_in_the_same_instant_as_stop_does_not_keep_the_worker_alive(tmp_path: Path) -> None:
    db = ClaimsSeen(f"sqlite:///{tmp_path}/memory.sqlite3")
    db.migrate()
    retrieval = RetrievalConnection(unreachable_address())
    worker = OutboxWorker(db, retrieval, policy=OutboxPolicy(idle_poll_seconds=30.0))
    try:
        worker.start()
        await db.claimed.wait()  # the first (empty) claim is done: the worker now waits, idle
        worker.notify()  # a write's (or a notice's) wake-up, in the same loop turn as the stop
        try:
            async with asyncio.timeout(STOP_WITHIN_SECONDS):
                await worker.stop()
        except TimeoutError:
            raise AssertionError("the worker outlived stop(): its cancellation was dropped") from None
    finally:
        await retrieval.close()
        db.close()
