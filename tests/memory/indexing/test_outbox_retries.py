"""The outbox's retry, backoff and parking promises (the module docstring of ``indexing/outbox.py``):

- a document RetrievalService refuses is retried alone, with exponential backoff and jitter, and
  parked (with the reason and its attempts) after ``max_attempts``; the others are delivered;
- a document that can never be delivered (larger than any request) is parked at once;
- while RetrievalService is unreachable every job waits with backoff, and none is parked;
- a parked job waits for an operator (``ParkedJobs``), who puts it back into the loop.

The store is a real SQLite file and the worker the real one; RetrievalService is replaced by a
stand-in only to inject the faults (a refusal of named documents, an outage).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import grpc
import pytest
from sqlalchemy import select

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.domain.errors import RetrievalUnavailable
from strata_memory.indexing.fairness import smallest_share_first
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.operations.parked_jobs import MAX_RETRY_IDS, ParkedJobs
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs, schema
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, IndexJob, PassageRecord, now_us
from strata_serving.errors import InvalidArgument

POLICY = OutboxPolicy(batch_size=16, max_attempts=3, max_backoff_seconds=0.4)


class Refusal(grpc.aio.AioRpcError):
    def __init__(self, details: str) -> None:
        empty = grpc.aio.Metadata()
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT, empty, empty, details, None)


class Retrieval:
    """Refuses any request holding a document of ``refused``; ``down`` makes every call fail as
    RetrievalService unreachable would."""

    def __init__(self, refused: Sequence[str] = ()) -> None:
        self.refused = set(refused)
        self.down = False
        self.indexed: list[str] = []
        self.deletes: list[rpb.DeleteDocumentsRequest] = []
        self.upserted = asyncio.Event()

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self._reachable()
        if bad := [d.id for d in documents if d.id in self.refused]:
            raise Refusal(f"cannot index {bad[0]}")
        self.indexed.extend(d.id for d in documents)
        self.upserted.set()

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        self._reachable()
        self.deletes.append(request)

    def _reachable(self) -> None:
        if self.down:
            raise RetrievalUnavailable("down", metadata={"status": "UNAVAILABLE"})


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    yield database
    database.close()


def write(db: Database, tenant: str, texts: Sequence[str]) -> list[str]:
    """Store passages of ``tenant`` with their upsert jobs, as a write does; returns their ids."""
    archive = f"archive-{tenant}"
    passages = [
        PassageRecord(f"passage-{tenant}-{i}", tenant, archive, text, created_us=i + 1)
        for i, text in enumerate(texts)
    ]
    with db.writing() as conn:
        archive_rows.insert_archive(conn, ArchiveRecord(archive, tenant, "facts", "", 0))
        archive_rows.insert_passages(conn, passages)
        index_jobs.enqueue(conn, tenant, index_jobs.UPSERT, [p.id for p in passages])
    return [p.id for p in passages]


def jobs(db: Database) -> dict[str, dict[str, object]]:
    """The outbox rows by document id."""
    with db.writing() as conn:
        rows = conn.execute(select(schema.index_jobs)).mappings().all()
    return {str(row["document_id"]): dict(row) for row in rows}


def make_due(db: Database) -> None:
    with db.writing() as conn:
        conn.execute(schema.index_jobs.update().values(next_attempt_us=0))


def worker(db: Database, retrieval: Retrieval, policy: OutboxPolicy = POLICY) -> OutboxWorker:
    return OutboxWorker(db, cast(RetrievalConnection, retrieval), policy=policy)


async def test_a_refused_document_is_retried_with_backoff_while_the_others_are_delivered(
    db: Database,
) -> None:
    good_1, bad, good_2 = write(db, "t", ["one", "two", "three"])
    retrieval = Retrieval(refused=[bad])
    before = now_us()
    assert await worker(db, retrieval).deliver_once() == 3  # all settled: two delivered, one postponed
    after = now_us()
    assert sorted(retrieval.indexed) == sorted([good_1, good_2])
    left = jobs(db)
    assert list(left) == [bad]
    assert left[bad]["attempts"] == 1
    assert left[bad]["parked_us"] is None
    assert left[bad]["last_error"] == f"INVALID_ARGUMENT: cannot index {bad}"
    due = int(cast(int, left[bad]["next_attempt_us"]))
    assert before + 100_000 <= due <= after + 200_000  # first retry after 0.2 s, jittered to 0.1-0.2 s
    assert left[bad]["lease_owner"] == ""


async def test_a_document_refused_max_attempts_times_is_parked_with_its_reason(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    (bad,) = write(db, "t", ["never"])
    retrieval = Retrieval(refused=[bad])
    sender = worker(db, retrieval)
    for attempt in range(1, POLICY.max_attempts):
        assert await sender.deliver_once() == 1
        assert jobs(db)[bad]["attempts"] == attempt
        assert jobs(db)[bad]["parked_us"] is None
        make_due(db)
    with caplog.at_level(logging.ERROR, logger="strata.memory.outbox"):
        assert await sender.deliver_once() == 1
    parked = jobs(db)[bad]
    assert parked["attempts"] == POLICY.max_attempts
    assert parked["parked_us"] is not None
    assert parked["last_error"] == f"INVALID_ARGUMENT: cannot index {bad}"
    # the operator is told (DESIGN.md: isolated and reported): which job, document and tenant, after
    # how many attempts (as stored), and why
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        f"index job {parked['id']} (upsert {bad} of tenant t) parked after {POLICY.max_attempts} attempts: "
        f"INVALID_ARGUMENT: cannot index {bad}"
    ]
    make_due(db)
    assert await sender.deliver_once() == 0  # parked: out of the loop, however due
    assert retrieval.indexed == []


async def test_an_operator_lists_and_retries_parked_jobs(db: Database) -> None:
    (bad,) = write(db, "t", ["never"])
    write(db, "u", ["fine"])
    retrieval = Retrieval(refused=[bad])
    sender = worker(db, retrieval, OutboxPolicy(max_attempts=1))
    assert await sender.deliver_once() == 2
    woken: list[bool] = []
    operator = ParkedJobs(db, lambda: woken.append(True))
    listed, token = await operator.list("t", page_size=10, page_token="")
    assert [(j.document_id, j.attempts, j.scope_id, j.tenant_id) for j in listed] == [
        (bad, 1, "archive-t", "t")
    ]
    assert listed[0].reason == f"INVALID_ARGUMENT: cannot index {bad}"
    assert token == ""
    assert (await operator.list("u", page_size=10, page_token=""))[0] == []  # another tenant sees none
    assert await operator.retry("u", []) == 0
    assert woken == []  # nothing put back, nobody woken
    retrieval.refused.clear()
    assert await operator.retry("t", [listed[0].id]) == 1
    assert woken == [True]
    assert jobs(db)[bad]["attempts"] == 0
    assert await sender.deliver_once() == 1
    assert retrieval.indexed == ["passage-u-0", bad]
    assert jobs(db) == {}


async def test_retrying_parked_jobs_refuses_bad_ids(db: Database) -> None:
    operator = ParkedJobs(db, lambda: None)
    with pytest.raises(InvalidArgument, match="positive") as zero:
        await operator.retry("t", [1, 0])
    with pytest.raises(InvalidArgument, match="at most") as too_many:
        await operator.retry("t", list(range(1, MAX_RETRY_IDS + 2)))
    assert [field for field, _ in zero.value.field_violations + too_many.value.field_violations] == [
        "job_ids",
        "job_ids",
    ]
    assert await operator.retry("t", list(range(1, MAX_RETRY_IDS + 1))) == 0  # exactly the limit is allowed


async def test_a_document_larger_than_any_request_is_parked_at_once(db: Database) -> None:
    small, huge = write(db, "t", ["small", "x" * 5_000])
    retrieval = Retrieval()
    assert await worker(db, retrieval, OutboxPolicy(max_request_bytes=4_000)).deliver_once() == 2
    assert retrieval.indexed == [small]
    parked = jobs(db)[huge]
    assert (parked["attempts"], parked["parked_us"] is not None) == (1, True)
    assert "bytes" in str(parked["last_error"])


async def test_while_retrieval_is_unreachable_jobs_wait_with_backoff_and_none_is_parked(db: Database) -> None:
    written = write(db, "t", ["one", "two"])
    retrieval = Retrieval()
    retrieval.down = True
    sender = worker(db, retrieval)
    for attempt in range(1, POLICY.max_attempts + 3):  # beyond max_attempts: an outage parks nothing
        before = now_us()
        assert await sender.deliver_once() == 0
        left = jobs(db)
        assert sorted(left) == sorted(written)
        for job in left.values():
            assert job["attempts"] == attempt
            assert job["parked_us"] is None
            assert job["last_error"] == "down"
            assert before < int(cast(int, job["next_attempt_us"])) <= now_us() + 400_000  # capped at 0.4 s
        make_due(db)
    retrieval.down = False
    assert await sender.deliver_once() == 2
    assert sorted(retrieval.indexed) == sorted(written)
    assert jobs(db) == {}


@pytest.mark.parametrize("attempts", [0, 1, 2, 3, 5, 10, 1_000])
def test_backoff_is_exponential_capped_and_jittered(db: Database, attempts: int) -> None:
    policy = OutboxPolicy(max_backoff_seconds=3.0)
    delays = [worker(db, Retrieval(), policy).backoff(attempts) for _ in range(200)]
    full = min(0.2 * 2**attempts, 3.0)
    assert all(full / 2 <= delay <= full for delay in delays)
    assert min(delays) < full * 0.6  # the jitter spreads the whole half...
    assert max(delays) > full * 0.9  # ...to full range
    assert len(set(delays)) > 100


async def test_delete_jobs_send_each_id_once_and_scope_deletes_name_the_scope(db: Database) -> None:
    with db.writing() as conn:
        index_jobs.enqueue(conn, "t", index_jobs.DELETE, ["passage-1", "passage-2", "passage-1"])
    retrieval = Retrieval()
    assert await worker(db, retrieval).deliver_once() == 3
    assert [(r.ids.tenant_id, list(r.ids.ids)) for r in retrieval.deletes] == [
        ("t", ["passage-1", "passage-2"])
    ]
    retrieval.deletes.clear()
    with db.writing() as conn:
        index_jobs.enqueue(conn, "t", index_jobs.DELETE_AGENT, ["agent-1"])
    with db.writing() as conn:
        index_jobs.enqueue(conn, "t", index_jobs.DELETE_ARCHIVE, ["archive-1"])
    sender = worker(db, retrieval)
    while await sender.deliver_once():
        pass
    filters = [r.filter for r in retrieval.deletes]
    assert [(f.tenant_id, list(f.agent_ids), list(f.archive_ids)) for f in filters] == [
        ("t", ["agent-1"], []),
        ("t", [], ["archive-1"]),
    ]
    assert jobs(db) == {}


async def test_a_timed_out_batch_is_retried_smaller_and_the_window_grows_back(db: Database) -> None:
    written = write(db, "t", [f"fact {i}" for i in range(40)])

    class Slow(Retrieval):
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []
            self.slow = True

        async def upsert(self, documents: Sequence[rpb.Document]) -> None:
            self.sizes.append(len(documents))
            if self.slow and len(documents) > 4:
                raise RetrievalUnavailable("deadline", metadata={"status": "DEADLINE_EXCEEDED"})
            await super().upsert(documents)

    retrieval = Slow()
    sender = worker(db, retrieval, OutboxPolicy(batch_size=16, max_backoff_seconds=0.0))
    for _ in range(2):  # 16 -> 8 -> 4
        assert await sender.deliver_once() == 0
        make_due(db)
    assert await sender.deliver_once() == 4
    assert retrieval.sizes == [16, 8, 4]
    retrieval.slow = False
    assert await sender.deliver_once() == 8  # doubled after a success
    assert await sender.deliver_once() == 16  # and back to the full batch
    assert await sender.deliver_once() == 12
    assert sorted(retrieval.indexed) == sorted(written)


async def test_an_unavailable_retrieval_that_is_not_a_timeout_keeps_the_window(db: Database) -> None:
    write(db, "t", [f"fact {i}" for i in range(20)])
    retrieval = Retrieval()
    retrieval.down = True
    sender = worker(db, retrieval, OutboxPolicy(batch_size=16, max_backoff_seconds=0.0))
    await sender.deliver_once()
    make_due(db)
    retrieval.down = False
    assert await sender.deliver_once() == 16


def test_smallest_share_first_keeps_each_tenants_claim_order() -> None:
    def job(i: int, tenant: str) -> IndexJob:
        return IndexJob(i, tenant, index_jobs.UPSERT, f"passage-{i}", 0)

    claimed = [job(1, "big"), job(2, "small"), job(3, "big"), job(4, "mid"), job(5, "big"), job(6, "mid")]
    assert [j.id for j in smallest_share_first(claimed)] == [2, 4, 6, 1, 3, 5]


async def test_a_write_announced_while_the_worker_finds_nothing_is_not_missed(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write committed and announced (``notify``) after the worker's claim found the outbox empty,
    but before that round ended, is delivered at once, not at the next poll an hour later."""
    retrieval = Retrieval()
    sender = worker(db, retrieval, OutboxPolicy(idle_poll_seconds=3600))
    written: list[str] = []
    claim = sender.claim

    async def claim_then_a_write_lands() -> list[IndexJob]:
        claimed = await claim()
        if not written:
            written.extend(write(db, "t", ["fresh"]))
            sender.notify()
        return claimed

    monkeypatch.setattr(sender, "claim", claim_then_a_write_lands)
    sender.start()
    try:
        await asyncio.wait_for(retrieval.upserted.wait(), timeout=30)
        assert retrieval.indexed == written
    finally:
        await sender.stop()


async def test_wait_delivered_gives_up_after_its_time_and_says_so(db: Database) -> None:
    write(db, "t", ["stuck"])
    retrieval = Retrieval()
    retrieval.down = True
    sender = worker(db, retrieval, OutboxPolicy(idle_poll_seconds=0.01, max_backoff_seconds=0.01))
    sender.start()
    try:
        ids = [int(cast(int, j["id"])) for j in jobs(db).values()]
        assert await sender.wait_delivered(ids, within=0.2) is False
        assert await sender.wait_delivered([], within=0.2) is True
    finally:
        await sender.stop()


async def test_a_deletion_landing_while_its_upsert_is_on_the_wire_is_not_undone(db: Database) -> None:
    kept, deleted = write(db, "t", ["kept", "deleted meanwhile"])

    class DeletingMeanwhile(Retrieval):
        async def upsert(self, documents: Sequence[rpb.Document]) -> None:
            await super().upsert(documents)
            with db.writing() as conn:  # another writer deletes it before the acknowledgement arrives
                archive_rows.delete_passage(conn, "t", deleted)

    retrieval = DeletingMeanwhile()
    assert await worker(db, retrieval).deliver_once() == 2
    assert sorted(retrieval.indexed) == sorted([kept, deleted])
    assert [(r.ids.tenant_id, list(r.ids.ids)) for r in retrieval.deletes] == [("t", [deleted])]


async def test_wait_delivered_waits_for_its_own_jobs_only(db: Database) -> None:
    bad, good = write(db, "t", ["never", "fine"])
    retrieval = Retrieval(refused=[bad])
    sender = worker(db, retrieval, OutboxPolicy(max_attempts=1, idle_poll_seconds=0.01))
    ids = {str(j["document_id"]): int(cast(int, j["id"])) for j in jobs(db).values()}
    sender.start()
    try:
        # returns once its job is delivered, while another write's parked job waits on (not after `within`)
        assert await asyncio.wait_for(sender.wait_delivered([ids[good]], within=3600), timeout=30)
        assert jobs(db)[bad]["parked_us"] is not None
        assert await sender.wait_delivered([ids[bad]], within=0.1) is False
    finally:
        await sender.stop()
