"""Two MemoryService processes on one store (SO_REUSEPORT, or replicas sharing a database) each run an
outbox worker. A deletion delivered by one of them while the other's upsert of the same document is
still on the wire (from its outbox after its lease on the job expired, or from a Reindex) must not
leave the deleted document searchable.

RetrievalService, its indexes and the store are real; the one stand-in holds a single upsert back
until the deletion went through (the fault: a slow network).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.reindex import Reindexer, ReindexScope
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair

TENANT = "t"
PASSAGE = PassageRecord(
    "passage-otter", TENANT, "archive-1", "Otters hold hands while they sleep.", created_us=1
)


class HeldUpsert(RetrievalConnection):
    """The real client, except that its upserts wait for ``release`` before they are sent."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.sending = asyncio.Event()
        self.release = asyncio.Event()

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.sending.set()
        await self.release.wait()
        await super().upsert(documents)


async def _indexed_ids(retrieval: RetrievalConnection) -> set[str]:
    request = rpb.SearchRequest(
        query="otters sleep", mode=rpb.SEARCH_MODE_FTS, filter=rpb.DocumentFilter(tenant_id=TENANT), top_k=10
    )
    return {hit.document.id for hit in (await retrieval.search(request)).hits}


@pytest.mark.parametrize("deletion", ["passage", "archive"])
@pytest.mark.parametrize("sender", ["outbox", "reindex"])
async def test_an_upsert_landing_after_another_workers_deletion_does_not_revive_the_document(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder, sender: str, deletion: str
) -> None:
    """``deletion``: the passage alone (a DELETE job of that document) or its whole archive (one
    DELETE_ARCHIVE job of the scope, ordered with no job of the document)."""
    pair = ServicePair(tmp_path, system_embedder)
    await pair.start_retrieval()
    db = Database(f"sqlite:///{tmp_path}/memory.sqlite3")
    db.migrate()
    slow, fast = HeldUpsert(pair.retrieval_address), RetrievalConnection(pair.retrieval_address)
    try:
        with db.writing() as conn:
            archive_rows.insert_archive(conn, ArchiveRecord("archive-1", TENANT, "facts", "", 0))
            archive_rows.insert_passages(conn, [PASSAGE])
            if sender == "outbox":
                index_jobs.enqueue(conn, TENANT, index_jobs.UPSERT, [PASSAGE.id])
        sending = asyncio.create_task(_send(sender, db, slow))
        await slow.sending.wait()  # the passage was read from the store and is being sent
        with db.writing() as conn:
            if deletion == "passage":
                archive_rows.delete_passage(conn, TENANT, PASSAGE.id)
                index_jobs.enqueue(conn, TENANT, index_jobs.DELETE, [PASSAGE.id])
            else:
                archive_rows.delete_archive(conn, "archive-1")
                index_jobs.enqueue(conn, TENANT, index_jobs.DELETE_ARCHIVE, ["archive-1"])
        other = OutboxWorker(db, fast)
        assert await other.deliver_once() == (2 if sender == "outbox" else 1)  # the deletion goes through
        slow.release.set()
        await sending  # the held upsert lands after the deletion

        assert PASSAGE.id not in await _indexed_ids(fast)
        assert not await db.read(index_jobs.pending)
    finally:
        await slow.close()
        await fast.close()
        db.close()
        await pair.stop_retrieval()


async def _send(sender: str, db: Database, retrieval: RetrievalConnection) -> None:
    if sender == "outbox":
        # The held upsert outlives its lease (a slow network), so the other worker may take the job over.
        await OutboxWorker(db, retrieval, policy=OutboxPolicy(lease_seconds=1e-6)).deliver_once()
    else:
        async for _ in Reindexer(db, retrieval).run(ReindexScope(tenant_id=TENANT), batch_size=16):
            pass
