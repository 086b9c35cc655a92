"""Whether this replica can reach its store, told to health: a replica that cannot reports NOT_SERVING.

Every ``every_seconds`` the store is probed (``Database.probe``: a new connection and ``SELECT 1``) on a
thread of its own, so a probe never queues behind the store threads' calls. A probe that fails, or is
still unanswered ``every_seconds`` later (a link that froze rather than broke), turns health NOT_SERVING;
the next probe that succeeds turns it SERVING again. While one probe hangs no other is started, so a
frozen link costs one thread, not one per period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

from strata_memory.store.database import Database

log = logging.getLogger("strata.store")

Report = Callable[[bool], Awaitable[None]]
"""Told ``True`` when the store answers again, ``False`` when it stops answering."""


class StoreWatch:
    def __init__(self, database: Database, report: Report, *, every_seconds: float) -> None:
        self._database = database
        self._report = report
        self._every = every_seconds
        self._task: asyncio.Task[None] | None = None
        self._probe: asyncio.Future[Exception | None] | None = None
        self.reachable = True

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="strata-store-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            reachable = await self.check()
            if reachable != self.reachable:
                self.reachable = reachable
                if reachable:
                    log.info("the store answers again: health SERVING")
                else:
                    log.error("the store cannot be reached: health NOT_SERVING")
                await self._report(reachable)

    async def check(self) -> bool:
        """Whether a probe (a new one, or the one still hanging) is answered within ``every_seconds``."""
        if self._probe is None or self._probe.done():
            self._probe = self._start_probe()
        try:
            failure = await asyncio.wait_for(asyncio.shield(self._probe), self._every)
        except TimeoutError:
            return False
        if failure is not None:
            log.warning("store probe failed: %s", failure)
        return failure is None

    def _start_probe(self) -> asyncio.Future[Exception | None]:
        """The probe's failure (None: answered), settled from a thread of its own."""
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Exception | None] = loop.create_future()

        def settle(failure: Exception | None) -> None:
            if not answered.done():
                answered.set_result(failure)

        def probe() -> None:
            failure: Exception | None = None
            try:
                self._database.probe()
            except Exception as error:  # noqa: BLE001  # any failure to answer is "unreachable"
                failure = error
            with contextlib.suppress(RuntimeError):  # the loop closed while this probe hung
                loop.call_soon_threadsafe(settle, failure)

        # A daemon thread: one hung on a frozen link must not hold the process at exit.
        threading.Thread(target=probe, name="strata-store-probe", daemon=True).start()
        return answered
