"""The outbox worker keeps its place in the tenant rotation from one batch to the next.

With more tenants waiting than a batch holds, every tenant is dealt a slot before any tenant is dealt
a second one (``fairness`` module: within ``ceil(T / budget)`` batches). ``fair_shares`` resumes
after the tenant it is told; this is the worker remembering what to tell it. A worker that forgot
its place would deal every batch to the first tenants by name while the others waited for them to
drain. The store is real (SQLite, and PostgreSQL when STRATA_TEST_POSTGRES_URL is set); only the
claims are taken, nothing is delivered.
"""

from __future__ import annotations

from collections import Counter
from typing import cast

from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from tests.store_backends import postgres_schema, store_url

__all__ = ["postgres_schema", "store_url"]  # fixtures: each test runs on SQLite and on PostgreSQL

BATCH = 4
TENANTS = [f"tenant-{i:02}" for i in range(10)]


async def test_every_tenant_is_served_before_any_tenant_is_served_twice(store_url: str) -> None:
    db = Database(store_url)
    db.migrate()
    try:
        with db.writing() as conn:
            for tenant in TENANTS:
                index_jobs.enqueue(
                    conn, tenant, index_jobs.UPSERT, [f"passage-{tenant}-{i}" for i in range(5)]
                )
        worker = OutboxWorker(db, cast(RetrievalConnection, None), policy=OutboxPolicy(batch_size=BATCH))
        served: Counter[str] = Counter()
        batches: list[list[str]] = []
        for _ in range(5):  # 20 slots: each of the 10 tenants twice
            batch = sorted(job.tenant_id for job in await worker.claim())
            batches.append(batch)
            assert len(batch) == BATCH, batches
            served.update(batch)
            counts = [served[tenant] for tenant in TENANTS]
            assert max(counts) - min(counts) <= 1, batches  # nobody twice before everybody once
    finally:
        db.close()
    assert served == dict.fromkeys(TENANTS, 2), batches
