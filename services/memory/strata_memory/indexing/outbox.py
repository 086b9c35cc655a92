"""Delivers the indexing outbox to RetrievalService: fairly across tenants, each failure isolated.

Writes commit their data and their index jobs in one transaction; this worker sends the jobs on.
Each round it leases a batch of jobs (``store.index_jobs.claim``: one worker per job at a time, each
document's jobs in order, a dead worker's leases expire), dealt round robin over the tenants with
jobs waiting (``fairness.fair_shares``), so one tenant's backlog delays another's fresh write by at
most one batch. Upserts carry each document as the store holds it at delivery time and are
idempotent, so a duplicate delivery converges; once an upsert is acknowledged the sender deletes
whatever it sent that the store no longer holds (``delivery.upsert_as_stored``).

The worker can keep ``deliveries_in_flight`` batches in flight (one by default), each claimed on its own
as two workers would claim them: while RetrievalService embeds one batch, the next one is claimed,
read from the store and sent, so its embedding starts as soon as the first one's ends, and the first
one's index write and settlement overlap the second's embedding instead of leaving the encoder idle.
A second batch starts only when a full window of jobs is waiting, so a backlog is worked off two
batches at a time while a stream of small writes gathers behind the batch in flight (one write per
batch would multiply the per-batch costs: a claim, a settlement, a Tantivy commit). One in flight is
the default: the window check on every wake-up costs CPU that only a machine with cores to spare
wins back (bench/perf/findings.md, "Figures moved out of module docstrings"). Leases keep a job with
one delivery, and a job is claimable only after the earlier jobs of its document were settled, so
each document's jobs still arrive in order.

A caller waiting until its write is searchable (``wait_delivered``) is told by the worker when the
worker completes its jobs: waiters read nothing from the store while this worker delivers for them,
so a stream of small writes with ``wait_searchable`` does not multiply store reads by the writers
waiting. Jobs another replica's worker delivered are found by one read of the store per poll
interval for all waiters together (``waiters.DeliveryWaiters``), however many calls wait; a waiter reads the
store itself only when its time runs out. After a delivery that released waiters, the
worker waits up to ``linger_seconds`` for as many new writes before claiming (``_linger``): writers
that waited write again at once, and their writes then share one batch instead of trickling out in
several, each with its own claim, settlement and RetrievalService call.

Failures stay with the job that caused them (``delivery``): a document that cannot be built, or is
larger than any request may be, is parked at once; a request RetrievalService refuses is split until
the refused documents are alone, and only those are retried with exponential backoff and jitter,
then parked (with the reason and the attempts) after ``max_attempts``. Parked jobs wait for an
operator (AdminService ``ListParkedIndexJobs`` / ``RetryParkedIndexJobs``); nothing behind them
waits. While RetrievalService is unreachable every job waits with backoff and none is parked.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import random
import socket
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing import delivery
from strata_memory.indexing.fairness import fair_shares, smallest_share_first
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.indexing.waiters import DeliveryWaiters
from strata_memory.limits import outbox_batch_bytes
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import IndexJob
from strata_serving import tracing
from strata_serving.errors import StrataError

log = logging.getLogger("strata.memory.outbox")
MAX_BATCH_DOCUMENTS = 512
"""RetrievalService's default ``max_batch_documents``; a batch never holds more."""


_JITTER = random.Random()
"""Backoff jitter's own generator, so retries never advance the process's global ``random`` state."""


@dataclass(frozen=True, slots=True)
class OutboxPolicy:
    """How the worker batches, retries and leases (settings ``outbox_*``)."""

    batch_size: int = 256
    idle_poll_seconds: float = 1.0
    max_backoff_seconds: float = 5.0
    max_attempts: int = 8
    """Refusals of one document before its job is parked."""
    max_request_bytes: int = 64 * 1024 * 1024
    """RetrievalService's receive limit (its ``max_message_bytes``)."""
    lease_seconds: float = 30.0
    """How long a claimed job stays with this worker before another may take it over."""
    deliveries_in_flight: int = 1
    """Batches claimed and sent at once (each its own claim, as separate workers would)."""
    linger_seconds: float = 0.05
    """After a delivery that released waiters, how long to wait for as many new writes (``_linger``)."""


async def waited(wait: Coroutine[object, object, object], seconds: float) -> None:
    """Await ``wait`` for at most ``seconds``. Not ``asyncio.wait_for``: on Python 3.11 it drops a
    cancellation that lands as ``wait`` completes (a wake-up in the same instant as ``stop()``), which
    kept a stopped worker waiting forever; ``asyncio.timeout`` keeps it."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await wait


class OutboxWorker:
    def __init__(
        self,
        db: Database,
        retrieval: RetrievalConnection,
        *,
        policy: OutboxPolicy = OutboxPolicy(),
        context_turns: int = 0,
        context_legs: str = "both",
        name: str | None = None,
    ) -> None:
        self._db = db
        self._retrieval = retrieval
        self._policy = policy
        self._window = policy.batch_size  # shrinks after a batch ran out of time, grows back after successes
        self._context_turns = context_turns
        self._context_legs = context_legs
        self.name = name or f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._resume_after: str | None = None
        self._wake = asyncio.Event()
        self._waiters = DeliveryWaiters(db, policy.idle_poll_seconds)
        self._announced = 0  # writes announced (``notify``) so far
        self._released = 0  # waiters released by the last delivery
        self._released_at = 0  # writes announced when the first of them was released
        self._tasks: list[asyncio.Task[None]] = []
        self._in_flight = 0  # batches being delivered now

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run(), name=f"strata-outbox-{i}")
            for i in range(max(1, self._policy.deliveries_in_flight))
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._waiters.stop()

    def notify(self) -> None:
        """New jobs were committed: deliver now rather than at the next poll."""
        self._announced += 1
        self._wake.set()

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool:
        """Wait until every job of ``job_ids`` was acknowledged; False if ``within`` seconds passed first.

        The worker tells each waiter which of its jobs it completed (``_settle``), so waiters read
        nothing from the store while this worker delivers their jobs. Jobs another replica's worker
        delivered, or that this worker settled before the waiter started waiting, are found by one
        poll of the store per poll interval for all waiters together (``DeliveryWaiters``): however
        many calls wait, the store is read once per interval. A waiter whose time is up reads the
        store once more itself (:mod:`strata_memory.indexing.waiters` states the rules)."""
        return await self._waiters.wait(job_ids, within)

    async def _run(self) -> None:
        while True:
            self._wake.clear()  # before the claim: a write announced during this round wakes the next
            try:
                delivered = await self.deliver_once()
            except Exception:
                log.exception("outbox delivery failed unexpectedly; retrying")
                delivered = 0
            if delivered:
                await self._linger()
                continue
            await waited(self._wake.wait(), self._policy.idle_poll_seconds)

    async def _linger(self) -> None:
        """After a delivery that released waiters, wait (at most ``linger_seconds``) until as many new
        writes were announced before claiming: writers that waited until searchable usually write
        again at once, and claiming at the first of their writes would send them in several batches,
        each with its own claim, settlement and RetrievalService call (measured: bench/perf/findings.md).
        Nothing released (an import, writers that do not wait), nothing to wait for."""
        released, self._released = self._released, 0
        if not released or self._policy.linger_seconds <= 0:
            return
        target = self._released_at + released
        loop = asyncio.get_running_loop()
        until = loop.time() + self._policy.linger_seconds
        while self._announced < target and (left := until - loop.time()) > 0:
            self._wake.clear()
            await waited(self._wake.wait(), left)

    async def claim(self) -> list[IndexJob]:
        """Lease the next batch: up to the window's jobs, dealt round robin over waiting tenants.

        The backlogs are counted in a read transaction first: counting every waiting job inside the
        claim's write transaction held the store's write lock for as long as a large import's backlog
        took to count, ahead of every tenant's writes. They only shape the deal; the claim re-checks
        each job it takes."""
        lease_us = int(self._policy.lease_seconds * 1_000_000)
        backlogs = await self._db.read(index_jobs.backlogs)

        def work(conn: Connection) -> list[IndexJob]:
            shares = fair_shares(backlogs, self._window, resume_after=self._resume_after)
            self._resume_after = shares.resume_after
            return index_jobs.claim(conn, shares.per_tenant, owner=self.name, lease_us=lease_us)

        return await self._db.write(work)

    async def deliver_once(self) -> int:
        """Claim and deliver one batch; returns how many jobs were settled (delivered or parked).
        While another batch of this worker is in flight, only a full window is claimed: a stream of
        small writes gathers into the next batch instead of trickling out one write per batch."""
        if self._in_flight and not await self._db.read(self._window_waiting):
            return 0
        self._in_flight += 1
        try:
            return await self._claim_and_deliver()
        finally:
            self._in_flight -= 1

    def _window_waiting(self, conn: Connection) -> bool:
        return sum(index_jobs.backlogs(conn).values()) >= self._window

    async def _claim_and_deliver(self) -> int:
        jobs = smallest_share_first(await self.claim())
        settled = 0
        for (tenant_id, action), run in itertools.groupby(jobs, key=lambda job: (job.tenant_id, job.action)):
            batch = list(run)
            try:
                with tracing.span("outbox.deliver", tenant=tenant_id, action=action, jobs=len(batch)):
                    refused = await self._deliver(tenant_id, action, batch)
            except StrataError as failure:
                self._adapt(failure)
                await self._postpone(jobs[settled:], failure)
                return settled
            await self._settle(batch, refused)
            settled += len(batch)
        if settled:
            self._window = min(self._policy.batch_size, self._window * 2)
        return settled

    def _adapt(self, failure: StrataError) -> None:
        """A batch that ran out of time is retried smaller, so a slow embedder cannot loop forever
        re-sending a batch it never finishes within the deadline."""
        if failure.metadata.get("status") == "DEADLINE_EXCEEDED":
            self._window = max(1, self._window // 2)
            log.warning("indexing batch timed out; next batches hold at most %d jobs", self._window)

    async def _deliver(self, tenant_id: str, action: str, jobs: list[IndexJob]) -> list[delivery.Refused]:
        """Send one tenant's run of one action; returns what was refused (per document or scope)."""
        ids = [job.document_id for job in jobs]
        if action == index_jobs.UPSERT:
            built = await self._db.read(
                lambda conn: delivery.documents_as_stored(
                    conn, tenant_id, ids, context_turns=self._context_turns, context_legs=self._context_legs
                )
            )
            budget = outbox_batch_bytes(self._policy.max_request_bytes)
            batches, oversized = delivery.byte_batches(built.documents, budget, MAX_BATCH_DOCUMENTS)
            refused = [*built.refused, *oversized]
            for batch in batches:
                refused += await delivery.upsert_isolating(self._db, self._retrieval, tenant_id, batch)
            return refused
        if action == index_jobs.DELETE:

            async def delete(part: list[str]) -> None:
                request = rpb.DeleteDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=part))
                await self._retrieval.delete(request)

            return [
                delivery.Refused(i, why)
                for i, why in await delivery.isolate(list(dict.fromkeys(ids)), delete)
            ]

        async def delete_scope(scope_ids: list[str]) -> None:
            for scope_id in scope_ids:
                flt = rpb.DocumentFilter(tenant_id=tenant_id)
                target = flt.agent_ids if action == index_jobs.DELETE_AGENT else flt.archive_ids
                target.append(scope_id)
                await self._retrieval.delete(rpb.DeleteDocumentsRequest(filter=flt))

        return [
            delivery.Refused(i, why)
            for i, why in await delivery.isolate(list(dict.fromkeys(ids)), delete_scope)
        ]

    async def _settle(self, jobs: list[IndexJob], refused: list[delivery.Refused]) -> None:
        """Complete the delivered jobs; retry the refused ones later, or park them."""
        why = {r.document_id: r for r in refused}
        failed = [job for job in jobs if job.document_id in why]
        done = [job for job in jobs if job.document_id not in why]
        park = [
            job
            for job in failed
            if why[job.document_id].final or job.attempts + 1 >= self._policy.max_attempts
        ]
        later = [job for job in failed if job not in park]
        for job in park:
            log.error(
                "index job %d (%s %s of tenant %s) parked after %d attempts: %s",
                job.id,
                job.action,
                job.document_id,
                job.tenant_id,
                job.attempts + 1,
                why[job.document_id].reason,
            )

        def work(conn: Connection) -> list[int]:
            completed = index_jobs.complete(conn, done) if done else []
            for job in park:
                index_jobs.park(conn, [job], reason=why[job.document_id].reason)
            for job in later:
                delay_us = int(self.backoff(job.attempts) * 1_000_000)
                index_jobs.retry_later(conn, [job], delay_us=delay_us, error=why[job.document_id].reason)
            return completed

        registered_before = self._waiters.registered
        # A job whose lease ran out and was taken over is not completed here (its new holder does
        # that); its waiters hear of it from that holder or at their next poll of the store.
        completed = await self._db.write(work)
        released = self._waiters.release(completed, registered_before) if completed else 0
        if released:
            if not self._released:
                self._released_at = self._announced
            self._released += released

    def backoff(self, attempts: int) -> float:
        """Seconds before the next attempt: exponential in the attempts so far, capped, with jitter
        (a random half to full delay) so jobs refused together do not come back together."""
        delay = min(0.2 * 2.0 ** min(attempts, 30), self._policy.max_backoff_seconds)
        return delay * (0.5 + _JITTER.random() / 2)

    async def _postpone(self, jobs: Sequence[IndexJob], failure: StrataError) -> None:
        attempts = max(job.attempts for job in jobs)
        delay = self.backoff(attempts)
        log.warning(
            "indexing %d jobs failed (attempt %d), retrying in %.1f s: %s",
            len(jobs),
            attempts + 1,
            delay,
            failure,
        )
        await self._db.write(
            lambda conn: index_jobs.retry_later(
                conn, jobs, delay_us=int(delay * 1_000_000), error=str(failure)
            )
        )
