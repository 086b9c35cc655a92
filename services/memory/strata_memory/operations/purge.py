"""Forgetting with a receipt (``Purge``): delete a target everywhere Strata keeps it, then prove it.

Order of work, each step durable before the next:

1. One store transaction deletes the target's rows and every row holding a copy of its content
   (:mod:`strata_memory.store.purge`), deletes the outbox jobs naming its documents, queues one
   delete job per document (so a crash or an outage after the commit still reaches the index), and
   recompiles the prompts of the agents that held a purged block; this process's render cache drops
   every rendering that included a purged block (other replicas' caches hold theirs until evicted:
   never served again, as block ids are never reused). The delete jobs are leased to this
   purge for ``lease_seconds``: no outbox worker (of any replica) delivers them while the purge counts
   what each leg held, which it could not do after they had been delivered. Jobs of the purged
   documents that a worker is delivering right now are left to it: the purge waits (at most one
   lease) until they are settled, so an upsert already on the wire cannot land after its deletion.
2. RetrievalService is read by id (what each leg holds, for the counts), deletes the documents by id
   from both legs (an agent's also by filter, which reaches documents the store no longer knew of),
   and the delete jobs are dropped.
3. RetrievalService is read back by id (``FindDocuments``): the receipt is verified only when no leg
   holds any purged id. If RetrievalService cannot be reached, the store part stands, the delete
   jobs are handed to the outbox at once (or when the lease runs out, if this process died), and the
   receipt says ``verified = false`` and why.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from functools import partial

from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.domain.purge import (
    TEXT_LEG,
    VECTOR_LEG,
    PurgeKind,
    PurgeReceipt,
    PurgeTarget,
    Tally,
    ordered_counts,
    verdict,
)
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.operations.prompts import Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import index_jobs
from strata_memory.store import purge as purge_rows
from strata_memory.store.database import Database
from strata_memory.store.records import now_us
from strata_serving.errors import StrataError

ID_CHUNK = 1_000  # ids per DeleteDocuments / FindDocuments call (RetrievalService allows more)
SETTLE_POLL_SECONDS = 0.05


class Purger:
    def __init__(
        self, db: Database, prompts: Prompts, retrieval: RetrievalConnection, *, lease_seconds: float = 30.0
    ) -> None:
        self._db = db
        self._prompts = prompts
        self._retrieval = retrieval
        self._lease_us = int(lease_seconds * 1_000_000)

    async def purge(self, tenant_id: str, target: PurgeTarget) -> PurgeReceipt:
        """Purge ``target`` of ``tenant_id`` and return the receipt (see the module docstring)."""
        owner = f"purge-{uuid.uuid4().hex[:16]}"
        tally, job_ids, in_flight = await self._db.write(
            lambda conn: self._forget_rows(conn, tenant_id, target, owner)
        )
        self._prompts.renders.forget(tally.block_ids)
        self._prompts.replies.clear()  # a purge is rare: no kept reply outlives one (system texts too)
        ids = sorted(tally.document_ids)
        await self._settled(in_flight)
        try:
            held = await self._find(tenant_id, ids)
            unknown = await self._delete_documents(tenant_id, target, ids)
            await self._db.write(lambda conn: purge_rows.drop_job_ids(conn, job_ids))
            vector_ids, text_ids = await self._find(tenant_id, ids)
        except StrataError as failure:  # RetrievalService unavailable: the outbox deletes later
            await self._db.write(lambda conn: purge_rows.release_jobs(conn, job_ids, owner=owner))
            note = f"the index could not be reached or read back; delete jobs stay queued ({failure})"
            return _receipt(target, tally, ids, (False, (), note))
        tally.add(VECTOR_LEG, len(held[0]) + unknown)
        tally.add(TEXT_LEG, len(held[1]) + unknown)
        return _receipt(target, tally, ids, verdict(ids, vector_ids, text_ids))

    def _forget_rows(
        self, conn: Connection, tenant_id: str, target: PurgeTarget, owner: str
    ) -> tuple[Tally, list[int], list[int]]:
        tally = Tally()
        recompile: Sequence[str] = ()
        changed: Sequence[str] = ()
        match target.kind:
            case PurgeKind.AGENT:
                purge_rows.purge_agent(conn, tenant_id, target.id, tally)
            case PurgeKind.BLOCK:
                recompile = purge_rows.purge_block(conn, tenant_id, target.id, tally)
            case PurgeKind.PASSAGE:
                changed, recompile = purge_rows.purge_passage(conn, tenant_id, target.id, tally)
                changed = [agent_id for agent_id in changed if agent_id not in recompile]
            case PurgeKind.MESSAGE:
                changed = [purge_rows.purge_message(conn, tenant_id, target.id, tally)]
            case PurgeKind.CONVERSATION:
                purge_rows.purge_conversation(conn, tenant_id, target.agent_id, target.id, tally)
        named = sorted(tally.document_ids) + ([target.id] if target.kind is PurgeKind.AGENT else [])
        in_flight = purge_rows.drop_jobs(conn, tenant_id, named, tally)
        purge_rows.forget_write_requests(conn, tenant_id, {*named, *tally.block_ids}, tally)
        job_ids = index_jobs.enqueue(conn, tenant_id, index_jobs.DELETE, sorted(tally.document_ids))
        if target.kind is PurgeKind.AGENT:
            job_ids += index_jobs.enqueue(conn, tenant_id, index_jobs.DELETE_AGENT, [target.id])
        purge_rows.hold_jobs(conn, job_ids, owner=owner, until_us=now_us() + self._lease_us)
        for agent_id in sorted(recompile):  # every policy: no compiled text may keep a purged value
            self._prompts.recompile_all(
                conn, agent_rows.get_agent(conn, tenant_id, agent_id, for_update=True)
            )
        if changed:
            self._prompts.after_memory_change(conn, tenant_id, changed)
        return tally, job_ids, in_flight

    async def _settled(self, job_ids: Sequence[int]) -> None:
        """Wait (at most one lease) until no worker is delivering these jobs: an upsert of a purged
        document already on the wire lands first, and the worker then deletes what the store no
        longer holds (``delivery.upsert_as_stored``), before the purge deletes and reads back."""
        deadline = time.monotonic() + self._lease_us / 1_000_000
        waiting = list(job_ids)
        while waiting and time.monotonic() < deadline:
            waiting = await self._db.read(partial(purge_rows.leased_jobs, job_ids=waiting))
            if waiting:
                await asyncio.sleep(SETTLE_POLL_SECONDS)

    async def _delete_documents(self, tenant_id: str, target: PurgeTarget, ids: Sequence[str]) -> int:
        """Delete the documents from both index legs by id; for an agent, then whatever else the index
        holds of it (documents the store no longer knew of): returns how many of those there were."""
        for start in range(0, len(ids), ID_CHUNK):
            chunk = rpb.DocumentIds(tenant_id=tenant_id, ids=ids[start : start + ID_CHUNK])
            await self._retrieval.delete_counted(rpb.DeleteDocumentsRequest(ids=chunk))
        if target.kind is not PurgeKind.AGENT:
            return 0
        flt = rpb.DocumentFilter(tenant_id=tenant_id, agent_ids=[target.id])
        return await self._retrieval.delete_counted(rpb.DeleteDocumentsRequest(filter=flt))

    async def _find(self, tenant_id: str, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        vector_ids: list[str] = []
        text_ids: list[str] = []
        for start in range(0, len(ids), ID_CHUNK):
            found = await self._retrieval.find(tenant_id, ids[start : start + ID_CHUNK])
            vector_ids += found[0]
            text_ids += found[1]
        return vector_ids, text_ids


def _receipt(
    target: PurgeTarget, tally: Tally, ids: Sequence[str], checked: tuple[bool, tuple[str, ...], str]
) -> PurgeReceipt:
    verified, remaining, note = checked
    return PurgeReceipt(
        target=target.name,
        counts=ordered_counts(tally.counts),
        document_ids=tuple(ids),
        verified=verified,
        remaining_ids=remaining,
        note=note,
        purged_us=now_us(),
    )
