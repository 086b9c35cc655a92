"""The outbox's scheduling rule: round robin over tenants, with the bound its module states."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from strata_memory.indexing.fairness import fair_shares, smallest_share_first
from strata_memory.store.records import IndexJob


def test_one_tenants_backlog_leaves_room_for_every_other_tenant_in_the_same_batch() -> None:
    shares = fair_shares({"noisy": 6_000, "quiet": 1}, 256)
    assert shares.per_tenant == {"noisy": 255, "quiet": 1}


def test_slots_are_dealt_evenly_and_unused_ones_go_to_whoever_still_waits() -> None:
    assert fair_shares({"a": 100, "b": 100, "c": 100}, 9).per_tenant == {"a": 3, "b": 3, "c": 3}
    assert fair_shares({"a": 100, "b": 2, "c": 1}, 9).per_tenant == {"a": 6, "b": 2, "c": 1}
    assert fair_shares({"a": 2, "b": 1}, 9).per_tenant == {"a": 2, "b": 1}


def test_empty_backlogs_and_no_budget_deal_nothing() -> None:
    assert fair_shares({}, 10).per_tenant == {}
    assert fair_shares({"a": 0}, 10).per_tenant == {}
    assert fair_shares({"a": 5}, 0).per_tenant == {}


def test_when_tenants_outnumber_the_budget_the_rotation_resumes_where_it_stopped() -> None:
    backlogs = dict.fromkeys("abcde", 50)
    first = fair_shares(backlogs, 2)
    second = fair_shares(backlogs, 2, resume_after=first.resume_after)
    third = fair_shares(backlogs, 2, resume_after=second.resume_after)
    assert [first.per_tenant, second.per_tenant, third.per_tenant] == [
        {"a": 1, "b": 1},
        {"c": 1, "d": 1},
        {"e": 1, "a": 1},
    ]


@given(
    backlogs=st.dictionaries(st.sampled_from("abcdefghij"), st.integers(0, 500), max_size=10),
    budget=st.integers(1, 300),
    resume=st.sampled_from([None, *"abcdefghij"]),
)
def test_the_stated_bound_holds_for_any_backlogs(
    backlogs: dict[str, int], budget: int, resume: str | None
) -> None:
    shares = fair_shares(backlogs, budget, resume_after=resume).per_tenant
    waiting = {t: n for t, n in backlogs.items() if n > 0}
    assert sum(shares.values()) == min(budget, sum(waiting.values()))  # no slot wasted
    assert all(0 < shares[t] <= waiting[t] for t in shares)
    if waiting:
        floor = budget // len(waiting)
        assert all(shares.get(t, 0) >= min(n, floor) for t, n in waiting.items())


@given(tenants=st.integers(1, 40), budget=st.integers(1, 10))
def test_every_waiting_tenant_is_served_within_ceil_tenants_over_budget_batches(
    tenants: int, budget: int
) -> None:
    backlogs = {f"t{i:02}": 1_000 for i in range(tenants)}
    served: set[str] = set()
    resume = None
    for _ in range(math.ceil(tenants / budget)):
        shares = fair_shares(backlogs, budget, resume_after=resume)
        served |= set(shares.per_tenant)
        resume = shares.resume_after
    assert served == set(backlogs)


def test_a_batch_sends_the_smallest_shares_first_and_keeps_each_tenants_order() -> None:
    jobs = [IndexJob(i, tenant, "upsert", f"passage-{i}", 0) for i, tenant in enumerate("aaabcbd")]
    assert [job.id for job in smallest_share_first(jobs)] == [4, 6, 3, 5, 0, 1, 2]
