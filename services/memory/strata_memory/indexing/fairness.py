"""Which tenants' index jobs go into the next outbox batch: round robin over tenants.

A tenant's fresh write must not wait behind another tenant's backlog (the figures of a single FIFO:
bench/perf/findings.md). Each batch of ``budget`` jobs is dealt one slot at a time to the tenants with
jobs ready, in a fixed rotation that resumes after the tenant dealt the last slot of the previous
batch. The bound this gives (``fair_shares`` proves it in its
tests): with T tenants waiting, every tenant gets at least ``min(its backlog, budget // T)`` jobs of
each batch, and when T exceeds the budget every tenant is dealt a slot within ``ceil(T / budget)``
batches. So a tenant's fresh job waits behind at most one batch of anyone else's backlog
(``budget - 1`` jobs ahead of it) as long as it has fewer than ``budget // T`` jobs waiting itself,
however long the other backlogs are; the worker sends the tenants with the smallest share of a batch
first (``smallest_share_first``), so in practice it waits only for the batch already in flight
when it was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strata_memory.store.records import IndexJob


@dataclass(frozen=True, slots=True)
class Shares:
    """How many jobs to take from each tenant, and where the next batch's rotation resumes."""

    per_tenant: dict[str, int]
    resume_after: str | None


def fair_shares(backlogs: Mapping[str, int], budget: int, *, resume_after: str | None = None) -> Shares:
    """Deal ``budget`` slots round robin over the tenants with a positive backlog (in name order),
    starting with the first tenant after ``resume_after``; a tenant stops being dealt slots once its
    backlog is covered. Pure: the same inputs always give the same shares."""
    tenants = sorted(tenant for tenant, waiting in backlogs.items() if waiting > 0)
    shares = dict.fromkeys(tenants, 0)
    if not tenants or budget <= 0:
        return Shares({}, resume_after)
    start = next((i for i, tenant in enumerate(tenants) if resume_after is None or tenant > resume_after), 0)
    rotation = tenants[start:] + tenants[:start]
    last = resume_after
    left = budget
    while left > 0:
        dealt = False
        for tenant in rotation:
            if left == 0:
                break
            if shares[tenant] < backlogs[tenant]:
                shares[tenant] += 1
                left -= 1
                last = tenant
                dealt = True
        if not dealt:
            break
    return Shares({tenant: share for tenant, share in shares.items() if share}, last)


def smallest_share_first(jobs: Sequence[IndexJob]) -> list[IndexJob]:
    """The batch's jobs grouped by tenant, tenants with fewer jobs in it first, each tenant's jobs in
    the order they were claimed: a fresh write dealt one slot beside another tenant's full share is
    sent before that share, not after it."""
    by_tenant: dict[str, list[IndexJob]] = {}
    for job in jobs:
        by_tenant.setdefault(job.tenant_id, []).append(job)
    order = sorted(by_tenant, key=lambda tenant: len(by_tenant[tenant]))
    return [job for tenant in order for job in by_tenant[tenant]]
