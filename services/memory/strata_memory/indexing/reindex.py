"""Rebuild RetrievalService's indexes from the store: an agent, a tenant, or every tenant.

Every document the store holds in the scope is upserted again (in batches cut by bytes, refusals
isolated to single documents as in the outbox), and only then are the documents the index holds for
the scope but the store no longer does deleted. Nothing is deleted first, so a Reindex cancelled,
timed out or killed part-way leaves every stored document as searchable as before; running it again
(or to the end) converges, so it is idempotent. A document RetrievalService refuses is handed to the
outbox as an upsert job, which retries it and parks it if it keeps failing. Each tenant may run at
most ``streams_per_tenant`` Reindex streams at once (RESOURCE_EXHAUSTED beyond). A stream yields to
other work: with ``duty_cycle`` d < 1, after each batch it pauses (1/d - 1) times as long as the
batch took, so at most a share d of the time goes to re-embedding (0.5: a pause as long as the batch).

A batch's upsert and the deletion that follows it (of what the store no longer holds: a deletion
delivered while the upsert was on the wire must not be undone by it) go together: a stream cancelled
while they run stops after them. RetrievalService applies an upsert whose caller went away all the
same, so a cancellation in between would leave a document deleted meanwhile indexed for good.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing import delivery
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.limits import outbox_batch_bytes
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs, schema
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import Page
from strata_serving.admission import TenantConcurrency

_T = TypeVar("_T")
ALL_TENANTS = "*"
"""The key an every-tenant Reindex counts against in the per-tenant stream limit."""
MAX_BATCH_DOCUMENTS = 512
MAX_DELETE_IDS = 10_000


@dataclass(frozen=True, slots=True)
class ReindexScope:
    """What to rebuild: one agent of a tenant, a whole tenant, or (tenant None) everything."""

    tenant_id: str | None
    agent_id: str = ""


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    done: int


class Reindexer:
    def __init__(
        self,
        db: Database,
        retrieval: RetrievalConnection,
        *,
        context_turns: int = 0,
        context_legs: str = "both",
        max_request_bytes: int = 64 * 1024 * 1024,
        streams_per_tenant: int = 1,
        duty_cycle: float = 1.0,
    ) -> None:
        if not 0 < duty_cycle <= 1:
            raise ValueError("the Reindex duty cycle must be in (0, 1]")
        self._db = db
        self._retrieval = retrieval
        self._context_turns = context_turns
        self._context_legs = context_legs
        self._budget = outbox_batch_bytes(max_request_bytes)
        self.streams = TenantConcurrency(streams_per_tenant, what="Reindex streams")
        self._pause_per_second = 1 / duty_cycle - 1
        self._finishing: set[asyncio.Task[Any]] = set()  # upserts carried on past a cancelled stream

    async def run(self, scope: ReindexScope, *, batch_size: int) -> AsyncIterator[Progress]:
        async with self.streams.slot(scope.tenant_id or ALL_TENANTS):
            plan = await self._db.read(lambda conn: _plan(conn, scope))
            total = sum(len(ids) for ids in plan.values())
            done = 0
            yield Progress(total, done)
            for tenant_id, ids in plan.items():
                for start in range(0, len(ids), batch_size):
                    chunk = ids[start : start + batch_size]
                    began = time.monotonic()
                    await self._send(tenant_id, chunk)
                    if self._pause_per_second:
                        await asyncio.sleep((time.monotonic() - began) * self._pause_per_second)
                    done += len(chunk)
                    yield Progress(total, done)
                await self._drop_vanished(tenant_id, scope)

    async def _send(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Upsert these documents as the store holds them; hand what was refused to the outbox."""
        built = await self._db.read(
            lambda conn: delivery.documents_as_stored(
                conn, tenant_id, ids, context_turns=self._context_turns, context_legs=self._context_legs
            )
        )
        batches, oversized = delivery.byte_batches(built.documents, self._budget, MAX_BATCH_DOCUMENTS)
        refused = [*built.refused, *oversized]
        for batch in batches:
            refused += await self._unless_cancelled(
                delivery.upsert_isolating(self._db, self._retrieval, tenant_id, batch)
            )
        if refused:
            retry = [r.document_id for r in refused]
            await self._db.write(lambda conn: index_jobs.enqueue(conn, tenant_id, index_jobs.UPSERT, retry))

    async def _unless_cancelled(self, work: Coroutine[object, object, _T]) -> _T:
        """``work``, carried to its end even if this stream is cancelled meanwhile (the stream then
        stops as soon as it is done)."""
        task = asyncio.get_running_loop().create_task(work)
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)
        return await asyncio.shield(task)

    async def _drop_vanished(self, tenant_id: str, scope: ReindexScope) -> None:
        """Delete from the index the scope's documents that the store no longer holds."""
        for flt in await self._filters(tenant_id, scope):
            vanished: list[str] = []
            async for page in self._retrieval.list_ids(flt):
                kept = await self._db.read(partial(delivery.stored_ids, tenant_id=tenant_id, ids=page))
                vanished += [document_id for document_id in page if document_id not in kept]
            for start in range(0, len(vanished), MAX_DELETE_IDS):
                ids = rpb.DocumentIds(tenant_id=tenant_id, ids=vanished[start : start + MAX_DELETE_IDS])
                await self._retrieval.delete(rpb.DeleteDocumentsRequest(ids=ids))

    async def _filters(self, tenant_id: str, scope: ReindexScope) -> list[rpb.DocumentFilter]:
        if not scope.agent_id:
            return [rpb.DocumentFilter(tenant_id=tenant_id)]
        archive_ids = await self._db.read(lambda conn: archive_rows.agent_archive_ids(conn, scope.agent_id))
        filters = [rpb.DocumentFilter(tenant_id=tenant_id, agent_ids=[scope.agent_id])]
        if archive_ids:
            filters.append(rpb.DocumentFilter(tenant_id=tenant_id, archive_ids=archive_ids))
        return filters


def _plan(conn: Connection, scope: ReindexScope) -> dict[str, list[str]]:
    """Document ids to send, per tenant."""
    if scope.agent_id and scope.tenant_id is not None:
        agent_rows.get_agent(conn, scope.tenant_id, scope.agent_id)
        archive_ids = archive_rows.agent_archive_ids(conn, scope.agent_id)
        passages, _ = archive_rows.list_passages(conn, archive_ids, Page(0, 10**9))
        messages = message_rows.message_ids(conn, tenant_id=scope.tenant_id, agent_id=scope.agent_id)
        return {scope.tenant_id: [p.id for p in passages] + messages}
    tenants = [scope.tenant_id] if scope.tenant_id is not None else _tenants(conn)
    return {
        tenant: archive_rows.tenant_passage_ids(conn, tenant)
        + message_rows.message_ids(conn, tenant_id=tenant, agent_id=None)
        for tenant in tenants
    }


def _tenants(conn: Connection) -> list[str]:
    agents = set(conn.execute(select(schema.agents.c.tenant_id).distinct()).scalars())
    archives = set(conn.execute(select(schema.archives.c.tenant_id).distinct()).scalars())
    return sorted(agents | archives)
