"""Rebuild RetrievalService's indexes from the store: an agent, a tenant, or every tenant.

The scope's documents are first deleted from the indexes (so nothing the store no longer holds
survives), then sent again in batches. Progress is reported after each batch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

from sqlalchemy import select
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.delivery import current_documents, upsert_as_stored
from strata_memory.indexing.retrieval_client import RetrievalClient
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import messages as message_rows
from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_memory.store.records import Page


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
    def __init__(self, db: Database, retrieval: RetrievalClient, *, context_turns: int = 0) -> None:
        self._db = db
        self._retrieval = retrieval
        self._context_turns = context_turns

    async def run(self, scope: ReindexScope, *, batch_size: int) -> AsyncIterator[Progress]:
        plan = await self._db.read(lambda conn: _plan(conn, scope))
        total = sum(len(ids) for ids in plan.values())
        done = 0
        yield Progress(total, done)
        for tenant_id, ids in plan.items():
            await self._clear(tenant_id, scope)
            for start in range(0, len(ids), batch_size):
                chunk = ids[start : start + batch_size]
                documents = await self._db.read(
                    partial(
                        current_documents, tenant_id=tenant_id, ids=chunk, context_turns=self._context_turns
                    )
                )
                if documents:
                    await upsert_as_stored(self._db, self._retrieval, tenant_id, documents)
                done += len(chunk)
                yield Progress(total, done)

    async def _clear(self, tenant_id: str, scope: ReindexScope) -> None:
        if not scope.agent_id:
            await self._retrieval.delete(
                rpb.DeleteDocumentsRequest(filter=rpb.DocumentFilter(tenant_id=tenant_id))
            )
            return
        archive_ids = await self._db.read(lambda conn: archive_rows.agent_archive_ids(conn, scope.agent_id))
        await self._retrieval.delete(
            rpb.DeleteDocumentsRequest(
                filter=rpb.DocumentFilter(tenant_id=tenant_id, agent_ids=[scope.agent_id])
            )
        )
        if archive_ids:
            flt = rpb.DocumentFilter(tenant_id=tenant_id, archive_ids=archive_ids)
            await self._retrieval.delete(rpb.DeleteDocumentsRequest(filter=flt))


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
