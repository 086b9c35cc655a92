"""Delivers the indexing outbox to RetrievalService: in order, in batches, with retries.

Writes commit their data and their index jobs in one transaction; this worker sends the jobs on.
Upserts are idempotent by document id and carry the document as the store holds it at delivery time,
so a retry, a duplicate delivery after a crash, or two workers on one database all converge. Two
workers (processes sharing a store) can also overlap: one's upsert may still be on the wire when the
other delivers a deletion of the same document, and land after it (so may a Reindex). So once an
upsert is acknowledged, the sender reads the store again and deletes whatever it sent that the store
no longer holds; any deletion committed after that read is delivered after it, hence after the
upsert. A job leaves the outbox only after RetrievalService acknowledged it; while RetrievalService
is down, jobs wait with exponential backoff and nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Sequence
from functools import partial

import grpc
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.documents import message_document, passage_document
from strata_memory.indexing.retrieval_client import RetrievalClient
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import IndexJob, MessageRecord, PassageRecord
from strata_serving.errors import StrataError

log = logging.getLogger("strata.memory.outbox")
PARKED_US = 86_400 * 1_000_000


class OutboxWorker:
    def __init__(
        self,
        db: Database,
        retrieval: RetrievalClient,
        *,
        batch_size: int = 256,
        idle_poll_seconds: float = 1.0,
        max_backoff_seconds: float = 5.0,
        context_turns: int = 0,
    ) -> None:
        self._db = db
        self._retrieval = retrieval
        self._batch_size = batch_size
        self._window = batch_size  # shrinks after a batch ran out of time, grows back after successes
        self._idle_poll = idle_poll_seconds
        self._max_backoff = max_backoff_seconds
        self._context_turns = context_turns
        self._wake = asyncio.Event()
        self._delivered = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="strata-outbox")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def notify(self) -> None:
        """New jobs were committed: deliver now rather than at the next poll."""
        self._wake.set()

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool:
        """Wait until every job of ``job_ids`` was acknowledged; False if ``within`` seconds passed first."""
        ids = list(job_ids)
        try:
            async with asyncio.timeout(within):
                while await self._db.read(lambda conn: index_jobs.pending(conn, ids)):
                    await self._next_delivery()
        except TimeoutError:
            return not await self._db.read(lambda conn: index_jobs.pending(conn, ids))
        return True

    async def _next_delivery(self) -> None:
        """Return after the next acknowledged batch, or after one poll interval."""
        async with self._delivered:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._delivered.wait(), timeout=self._idle_poll)

    async def _run(self) -> None:
        while True:
            try:
                delivered = await self.deliver_once()
            except Exception:
                log.exception("outbox delivery failed unexpectedly; retrying")
                delivered = 0
            if delivered:
                async with self._delivered:
                    self._delivered.notify_all()
                continue
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._idle_poll)

    async def deliver_once(self) -> int:
        """Deliver one batch of due jobs; returns how many were acknowledged."""
        jobs = await self._db.read(lambda conn: index_jobs.due(conn, self._window))
        done = 0
        for action, run in itertools.groupby(jobs, key=lambda job: (job.action, job.tenant_id)):
            batch = list(run)
            try:
                await self._deliver(action[0], action[1], batch)
            except StrataError as failure:
                self._adapt(failure)
                await self._postpone(jobs[done:], failure)
                return done
            except grpc.aio.AioRpcError as refusal:
                await self._set_aside(batch, refusal)
                continue
            ids = [job.id for job in batch]
            await self._db.write(partial(index_jobs.complete, job_ids=ids))
            done += len(batch)
        self._window = min(self._batch_size, self._window * 2) if done else self._window
        return done

    def _adapt(self, failure: StrataError) -> None:
        """A batch that ran out of time is retried smaller, so a slow embedder cannot loop forever
        re-sending a batch it never finishes within the deadline."""
        if failure.metadata.get("status") == "DEADLINE_EXCEEDED":
            self._window = max(1, self._window // 2)
            log.warning("indexing batch timed out; next batches hold at most %d jobs", self._window)

    async def _deliver(self, action: str, tenant_id: str, jobs: list[IndexJob]) -> None:
        ids = [job.document_id for job in jobs]
        if action == index_jobs.UPSERT:
            documents = await self._db.read(
                lambda conn: current_documents(conn, tenant_id, ids, context_turns=self._context_turns)
            )
            if documents:
                await upsert_as_stored(self._db, self._retrieval, tenant_id, documents)
        elif action == index_jobs.DELETE:
            await self._retrieval.delete(
                rpb.DeleteDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=ids))
            )
        else:
            for scope_id in ids:
                flt = rpb.DocumentFilter(tenant_id=tenant_id)
                target = flt.agent_ids if action == index_jobs.DELETE_AGENT else flt.archive_ids
                target.append(scope_id)
                await self._retrieval.delete(rpb.DeleteDocumentsRequest(filter=flt))

    async def _set_aside(self, jobs: Sequence[IndexJob], refusal: grpc.aio.AioRpcError) -> None:
        """RetrievalService refused these jobs outright: park them (a day) so later jobs still flow."""
        log.error(
            "RetrievalService refused %d index jobs (%s): %s",
            len(jobs),
            refusal.code().name,
            refusal.details(),
        )
        ids = [job.id for job in jobs]
        error = f"{refusal.code().name}: {refusal.details()}"
        await self._db.write(lambda conn: index_jobs.retry_later(conn, ids, delay_us=PARKED_US, error=error))

    async def _postpone(self, jobs: Sequence[IndexJob], failure: StrataError) -> None:
        attempts = max(job.attempts for job in jobs)
        delay = min(0.2 * 2**attempts, self._max_backoff)
        log.warning(
            "indexing %d jobs failed (attempt %d), retrying in %.1f s: %s",
            len(jobs),
            attempts + 1,
            delay,
            failure,
        )
        ids = [job.id for job in jobs]
        await self._db.write(
            lambda conn: index_jobs.retry_later(
                conn, ids, delay_us=int(delay * 1_000_000), error=str(failure)
            )
        )


async def upsert_as_stored(
    db: Database, retrieval: RetrievalClient, tenant_id: str, documents: Sequence[rpb.Document]
) -> None:
    """Upsert documents read from the store, then delete from the index those the store no longer
    holds: a deletion delivered while the upsert was on the wire must not be undone by it."""
    await retrieval.upsert(documents)
    sent = [document.id for document in documents]
    kept = await db.read(lambda conn: _stored_ids(conn, tenant_id, sent))
    if vanished := [document_id for document_id in sent if document_id not in kept]:
        request = rpb.DeleteDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=vanished))
        await retrieval.delete(request)


def _stored_ids(conn: Connection, tenant_id: str, ids: Sequence[str]) -> set[str]:
    """Which of these passage and message ids the store still holds."""
    passages, messages = _stored(conn, tenant_id, ids)
    return {p.id for p in passages} | {m.id for m in messages}


def current_documents(
    conn: Connection, tenant_id: str, ids: Sequence[str], *, context_turns: int = 0
) -> list[rpb.Document]:
    """The documents for these ids as the store holds them now (deleted ones are skipped).

    A message is indexed with up to ``context_turns`` preceding dialogue turns of its conversation
    (see ``message_document``), read from the store now, like the message itself.
    """
    passages, messages = _stored(conn, tenant_id, ids)
    return [passage_document(p) for p in passages] + [
        message_document(m, message_rows.preceding_turns(conn, m, context_turns) if context_turns else ())
        for m in messages
    ]


def _stored(
    conn: Connection, tenant_id: str, ids: Sequence[str]
) -> tuple[list[PassageRecord], list[MessageRecord]]:
    """The passages and the messages among ``ids`` that the store holds now."""
    passage_ids = [i for i in ids if i.startswith("passage-")]
    message_ids = [i for i in ids if i.startswith("message-")]
    passages = archive_rows.get_passages(conn, tenant_id, passage_ids) if passage_ids else []
    messages = message_rows.get_messages(conn, tenant_id, message_ids) if message_ids else []
    return passages, messages
