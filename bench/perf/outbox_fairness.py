"""The outbox under a noisy tenant and with two workers.

`python -m bench.perf.outbox_fairness [--wall-clock]`

Three figures, each printed as one JSON line:

* ``jobs_ahead``: a noisy tenant has ``--noisy`` jobs queued and the outbox has delivered two batches
  of them; a quiet tenant writes one passage. How many jobs are delivered before it (a real SQLite
  store and the real worker; RetrievalService is a recorder that acknowledges at once, since only
  the order is measured). The bound the round-robin rule states is ``batch - 1``.
* ``upserts_per_job``: two workers on one store drain ``--jobs`` jobs of two tenants; documents sent
  over jobs written (1.0 means each job was delivered once).
* with ``--wall-clock``: through real services (RetrievalService with the embedder, MemoryService),
  the seconds a quiet tenant's ``AppendMessages(wait_searchable)`` takes with no backlog and right
  after a noisy tenant appended ``--noisy`` messages.

The script runs against whichever ``strata_memory`` is importable, so pointing ``PYTHONPATH`` at an
older tree measures the code before the change (it adapts to the older worker's constructor).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import grpc

from bench.servers import ServicePair
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder


class Recorder:
    def __init__(self, latency: float = 0.0) -> None:
        self.sent: list[str] = []
        self.latency = latency

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        await asyncio.sleep(self.latency)
        self.sent.extend(document.id for document in documents)

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        await asyncio.sleep(self.latency)


def worker(db: Database, recorder: Recorder, batch: int) -> OutboxWorker:
    """The worker of whichever version is installed, with a batch of ``batch`` jobs."""
    client = cast(RetrievalConnection, recorder)
    if "policy" in inspect.signature(OutboxWorker).parameters:
        from strata_memory.indexing.outbox import OutboxPolicy  # absent before the change

        return OutboxWorker(db, client, policy=OutboxPolicy(batch_size=batch))
    return OutboxWorker(db, client, batch_size=batch)  # type: ignore[call-arg]


def write(db: Database, tenant: str, count: int) -> list[str]:
    archive = f"archive-{tenant}"
    passages = [
        PassageRecord(f"passage-{tenant}-{i}", tenant, archive, f"fact {i}", created_us=i + 1)
        for i in range(count)
    ]
    with db.writing() as conn:
        archive_rows.insert_archive(conn, ArchiveRecord(archive, tenant, "facts", "", 0))
        archive_rows.insert_passages(conn, passages)
        index_jobs.enqueue(conn, tenant, index_jobs.UPSERT, [p.id for p in passages])
    return [p.id for p in passages]


async def jobs_ahead(root: Path, noisy: int, batch: int) -> dict[str, Any]:
    db = Database(f"sqlite:///{root}/ahead.sqlite3")
    db.migrate()
    recorder = Recorder()
    outbox = worker(db, recorder, batch)
    write(db, "noisy", noisy)
    await outbox.deliver_once()
    await outbox.deliver_once()
    before = len(recorder.sent)
    [fresh] = write(db, "quiet", 1)
    while fresh not in recorder.sent:
        await outbox.deliver_once()
    db.close()
    return {
        "figure": "jobs_ahead",
        "noisy_backlog": noisy,
        "batch": batch,
        "jobs_ahead": recorder.sent.index(fresh) - before,
    }


async def upserts_per_job(root: Path, jobs: int, batch: int) -> dict[str, Any]:
    db = Database(f"sqlite:///{root}/leases.sqlite3")
    db.migrate()
    recorder = Recorder(latency=0.005)  # a few milliseconds on the wire, so the workers overlap
    written = write(db, "t1", jobs // 2) + write(db, "t2", jobs - jobs // 2)

    async def drain(outbox: OutboxWorker) -> None:
        while await db.read(index_jobs.pending):
            await outbox.deliver_once()

    started = time.monotonic()
    await asyncio.gather(drain(worker(db, recorder, batch)), drain(worker(db, recorder, batch)))
    elapsed = time.monotonic() - started
    db.close()
    return {
        "figure": "upserts_per_job",
        "workers": 2,
        "jobs": len(written),
        "upserts_sent": len(recorder.sent),
        "upserts_per_job": round(len(recorder.sent) / len(written), 3),
        "seconds": round(elapsed, 2),
    }


async def wall_clock(root: Path, noisy: int) -> dict[str, Any]:
    """Seconds until a quiet tenant's message is searchable, without and right after a noisy backlog."""
    embedder = OnnxSentenceEmbedder.load(root / "models", threads=2, batch_size=16)
    pair = ServicePair(root, embedder=embedder, memory_settings={"log_json": False}, quick_retries=False)
    await pair.start()
    try:
        async with grpc.aio.insecure_channel(pair.memory_address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            noisy_agent = await stub.CreateAgent(
                api.CreateAgentRequest(agent=pb.Agent(name="noisy")), metadata=(("x-strata-tenant", "noisy"),)
            )
            quiet_agent = await stub.CreateAgent(
                api.CreateAgentRequest(agent=pb.Agent(name="quiet")), metadata=(("x-strata-tenant", "quiet"),)
            )

            async def quiet_write() -> float:
                started = time.monotonic()
                await stub.AppendMessages(
                    api.AppendMessagesRequest(
                        agent_id=quiet_agent.id,
                        messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="a quiet remark")],
                        wait_searchable=True,
                    ),
                    metadata=(("x-strata-tenant", "quiet"),),
                    timeout=3_600,
                )
                return time.monotonic() - started

            baseline = await quiet_write()
            for start in range(0, noisy, 1_000):
                messages = [
                    pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"noisy note {i}")
                    for i in range(start, min(noisy, start + 1_000))
                ]
                await stub.AppendMessages(
                    api.AppendMessagesRequest(agent_id=noisy_agent.id, messages=messages),
                    metadata=(("x-strata-tenant", "noisy"),),
                )
            flooded = await quiet_write()
    finally:
        await pair.stop()
    return {
        "figure": "wall_clock",
        "noisy_messages": noisy,
        "quiet_baseline_seconds": round(baseline, 2),
        "quiet_after_backlog_seconds": round(flooded, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--noisy", type=int, default=6_000, help="the noisy tenant's backlog")
    parser.add_argument("--jobs", type=int, default=2_000, help="jobs the two workers drain")
    parser.add_argument("--batch", type=int, default=256, help="outbox batch size")
    parser.add_argument("--wall-clock", action="store_true", help="also measure through real services")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        print(json.dumps(await jobs_ahead(root, args.noisy, args.batch)))
        print(json.dumps(await upserts_per_job(root, args.jobs, args.batch)))
        if args.wall_clock:
            print(json.dumps(await wall_clock(root, args.noisy)))


if __name__ == "__main__":
    asyncio.run(main())
