"""The indexing outbox: jobs written in the same transaction as the data they index.

A job names a document (``passage-…`` or ``message-…``) and an action: ``upsert`` (send the document
as it is in the store when delivered) or ``delete``; ``delete_agent`` and ``delete_archive`` remove
every document of a scope. Jobs leave the table only once RetrievalService acknowledged them.

Delivery is shared by any number of workers (processes on one store): a worker *claims* jobs in a
write transaction by setting a lease (its name and an expiry) with a conditional ``UPDATE``, so two
workers never hold the same job; a dead worker's leases expire and another worker claims the jobs.
A worker settles (completes, retries or parks) only the jobs whose lease it still holds: a lease may
run out while its worker delivers, and another worker claim, deliver and complete the job meanwhile
(on SQLite the next job written may then take the freed id).
A job is claimable only when no older job of the same document is still waiting (leased elsewhere or
backing off), so each document's jobs are delivered in the order they were written. A *parked* job
(one RetrievalService keeps refusing) leaves the delivery loop, keeping its reason, until an
operator retries it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import and_, delete, exists, false, func, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from strata_memory.store import schema
from strata_memory.store.notices import announce_jobs
from strata_memory.store.records import IndexJob, Page, now_us

UPSERT, DELETE, DELETE_AGENT, DELETE_ARCHIVE = "upsert", "delete", "delete_agent", "delete_archive"
_jobs = schema.index_jobs


@dataclass(frozen=True, slots=True)
class ParkedJob:
    """A job out of the delivery loop: what it was for, why it was parked, after how many attempts."""

    id: int
    tenant_id: str
    action: str
    document_id: str
    scope_id: str
    """The message's agent or the passage's archive ("" when the store no longer holds the document)."""
    attempts: int
    reason: str
    parked_us: int
    created_us: int


def enqueue(conn: Connection, tenant_id: str, action: str, document_ids: Sequence[str]) -> list[int]:
    """Add one job per document; returns the job ids (for callers that wait until searchable)."""
    if not document_ids:
        return []
    stamp = now_us()
    rows = [
        {
            "tenant_id": tenant_id,
            "action": action,
            "document_id": document_id,
            "attempts": 0,
            "next_attempt_us": stamp,
            "last_error": "",
            "created_us": stamp,
            "parked_us": None,
            "lease_owner": "",
            "lease_until_us": 0,
        }
        for document_id in document_ids
    ]
    result = conn.execute(insert(_jobs).returning(_jobs.c.id), rows)
    job_ids = [int(job_id) for job_id in result.scalars()]
    announce_jobs(conn)  # other replicas' idle workers wake on commit (PostgreSQL)
    return job_ids


def _ready(now: int) -> ColumnElement[bool]:
    return and_(_jobs.c.parked_us.is_(None), _jobs.c.next_attempt_us <= now, _jobs.c.lease_until_us <= now)


def backlogs(conn: Connection) -> dict[str, int]:
    """Per tenant, how many jobs are ready to be claimed now (due, unleased, not parked)."""
    query = select(_jobs.c.tenant_id, func.count()).where(_ready(now_us())).group_by(_jobs.c.tenant_id)
    return {tenant: int(count) for tenant, count in conn.execute(query)}


def claim(conn: Connection, shares: Mapping[str, int], *, owner: str, lease_us: int) -> list[IndexJob]:
    """Lease up to ``shares[tenant]`` of each tenant's oldest claimable jobs to ``owner``; run it in a
    write transaction. Returns the jobs this call leased, per tenant in the order they were written."""
    now = now_us()
    earlier = _jobs.alias("earlier")
    waiting_before = exists().where(
        earlier.c.tenant_id == _jobs.c.tenant_id,
        earlier.c.document_id == _jobs.c.document_id,
        earlier.c.id < _jobs.c.id,
        earlier.c.parked_us.is_(None),
        (earlier.c.next_attempt_us > now) | (earlier.c.lease_until_us > now),
    )
    claimed: list[IndexJob] = []
    for tenant_id, share in shares.items():
        if share <= 0:
            continue
        candidates = (
            select(_jobs.c.id)
            .where(_jobs.c.tenant_id == tenant_id, _ready(now), ~waiting_before)
            .order_by(_jobs.c.id)
            .limit(share)
        )
        ids = list(conn.execute(candidates).scalars())
        if not ids:
            continue
        # Conditional on the lease being free still: on PostgreSQL a concurrent claimer that leased
        # a row first makes this UPDATE skip it after waiting for its row lock.
        leased = conn.execute(
            update(_jobs)
            .where(_jobs.c.id.in_(ids), _ready(now))
            .values(lease_owner=owner, lease_until_us=now + lease_us)
            .returning(
                _jobs.c.id,
                _jobs.c.tenant_id,
                _jobs.c.action,
                _jobs.c.document_id,
                _jobs.c.attempts,
                _jobs.c.lease_owner,
                _jobs.c.lease_until_us,
            )
        )
        claimed.extend(sorted((IndexJob(*row) for row in leased), key=lambda job: job.id))
    return claimed


def _held(jobs: Sequence[IndexJob]) -> ColumnElement[bool]:
    """The rows of ``jobs`` still under the lease each was claimed with."""
    by_lease: dict[tuple[str, int], list[int]] = {}
    for job in jobs:
        by_lease.setdefault((job.lease_owner, job.lease_until_us), []).append(job.id)
    if not by_lease:
        return false()
    return or_(
        *(
            and_(_jobs.c.id.in_(ids), _jobs.c.lease_owner == owner, _jobs.c.lease_until_us == until)
            for (owner, until), ids in by_lease.items()
        )
    )


def complete(conn: Connection, jobs: Sequence[IndexJob]) -> list[int]:
    """Delete the delivered ``jobs`` still held under their lease; returns the ids deleted."""
    deleted = conn.execute(delete(_jobs).where(_held(jobs)).returning(_jobs.c.id))
    return sorted(int(job_id) for job_id in deleted.scalars())


def retry_later(conn: Connection, jobs: Sequence[IndexJob], *, delay_us: int, error: str) -> None:
    """Count an attempt, release the lease, and make the jobs due again after ``delay_us`` (only
    the jobs still held under their lease)."""
    conn.execute(
        update(_jobs)
        .where(_held(jobs))
        .values(
            attempts=_jobs.c.attempts + 1,
            next_attempt_us=now_us() + delay_us,
            last_error=error[:1000],
            lease_owner="",
            lease_until_us=0,
        )
    )


def park(conn: Connection, jobs: Sequence[IndexJob], *, reason: str) -> None:
    """Count an attempt and take the jobs out of the delivery loop, keeping the reason (only the
    jobs still held under their lease)."""
    conn.execute(
        update(_jobs)
        .where(_held(jobs))
        .values(
            attempts=_jobs.c.attempts + 1,
            parked_us=now_us(),
            last_error=reason[:1000],
            lease_owner="",
            lease_until_us=0,
        )
    )


def parked(conn: Connection, *, tenant_id: str | None, page: Page) -> list[ParkedJob]:
    """One page of parked jobs, oldest first (of one tenant, or of all)."""
    messages, passages = schema.messages, schema.passages
    scope = func.coalesce(
        select(messages.c.agent_id).where(messages.c.id == _jobs.c.document_id).scalar_subquery(),
        select(passages.c.archive_id).where(passages.c.id == _jobs.c.document_id).scalar_subquery(),
        "",
    )
    query = (
        select(
            _jobs.c.id,
            _jobs.c.tenant_id,
            _jobs.c.action,
            _jobs.c.document_id,
            scope,
            _jobs.c.attempts,
            _jobs.c.last_error,
            _jobs.c.parked_us,
            _jobs.c.created_us,
        )
        .where(_jobs.c.parked_us.is_not(None))
        .order_by(_jobs.c.id)
        .offset(page.offset)
        .limit(page.size)
    )
    if tenant_id is not None:
        query = query.where(_jobs.c.tenant_id == tenant_id)
    return [ParkedJob(*row) for row in conn.execute(query)]


def unpark(conn: Connection, *, tenant_id: str | None, job_ids: Sequence[int]) -> int:
    """Put parked jobs (these, or all of a tenant's / everyone's when empty) back into the delivery
    loop, due now with their attempts reset; returns how many."""
    query = update(_jobs).where(_jobs.c.parked_us.is_not(None))
    if tenant_id is not None:
        query = query.where(_jobs.c.tenant_id == tenant_id)
    if job_ids:
        query = query.where(_jobs.c.id.in_(list(job_ids)))
    values = {"parked_us": None, "attempts": 0, "next_attempt_us": now_us(), "lease_until_us": 0}
    return int(conn.execute(query.values(**values)).rowcount)


def pending(conn: Connection, job_ids: Sequence[int] | None = None) -> int:
    """How many jobs are still undelivered, parked ones included (of ``job_ids``, or in all)."""
    query = select(func.count()).select_from(_jobs)
    if job_ids is not None:
        query = query.where(_jobs.c.id.in_(list(job_ids)))
    return int(conn.execute(query).scalar_one())


def still_pending(conn: Connection, job_ids: Sequence[int], *, chunk: int = 1_000) -> set[int]:
    """Which of ``job_ids`` are still undelivered (parked ones included), in statements of at most
    ``chunk`` ids."""
    found: set[int] = set()
    for start in range(0, len(job_ids), chunk):
        query = select(_jobs.c.id).where(_jobs.c.id.in_(list(job_ids[start : start + chunk])))
        found.update(int(job_id) for job_id in conn.execute(query).scalars())
    return found


def pending_for(conn: Connection, tenant_id: str, document_ids: Sequence[str]) -> list[int]:
    """Ids of the jobs still undelivered for these documents (a retried write waits on them)."""
    query = select(_jobs.c.id).where(
        _jobs.c.tenant_id == tenant_id, _jobs.c.document_id.in_(list(document_ids))
    )
    return list(conn.execute(query.order_by(_jobs.c.id)).scalars())


@dataclass(frozen=True, slots=True)
class OutboxDepth:
    """The outbox at a glance (for metrics): jobs waiting, parked, and when the oldest was written."""

    waiting: int
    parked: int
    oldest_created_us: int | None


def depth(conn: Connection) -> OutboxDepth:
    """Jobs not parked (due, leased or backing off), parked jobs, and the oldest job's creation time."""
    is_parked = _jobs.c.parked_us.is_not(None)
    query = select(
        func.count().filter(~is_parked), func.count().filter(is_parked), func.min(_jobs.c.created_us)
    )
    waiting, parked_count, oldest = conn.execute(query).one()
    return OutboxDepth(int(waiting or 0), int(parked_count or 0), None if oldest is None else int(oldest))
