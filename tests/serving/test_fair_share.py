"""FairShare: capacity, per-tenant share and queue, turns in round robin, weights, cancellation,
pacing under contention."""

from __future__ import annotations

import asyncio

import pytest

from strata_serving.errors import ResourceExhausted
from strata_serving.fair_share import Activity, FairShare, Pacing, PoolLimits


async def _hold(pool: FairShare, tenant: str, release: asyncio.Event, order: list[str]) -> None:
    async with pool.slot(tenant):
        order.append(tenant)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_tenant_runs_at_most_its_share_and_waits_beyond_it() -> None:
    pool = FairShare("searches", PoolLimits(capacity=4, share=2, queue=8))
    release, order = asyncio.Event(), list[str]()
    tasks = [asyncio.create_task(_hold(pool, "noisy", release, order)) for _ in range(5)]
    await _settle()
    assert (pool.running("noisy"), pool.waiting("noisy")) == (2, 3)  # even with capacity idle
    quiet = asyncio.create_task(_hold(pool, "quiet", release, order))
    await _settle()
    assert pool.running("quiet") == 1  # capacity left: the quiet tenant does not wait at all
    release.set()
    await asyncio.gather(*tasks, quiet)
    assert pool.running("noisy") == 0


async def test_a_freed_slot_goes_to_the_next_tenant_in_turn() -> None:
    pool = FairShare("writes", PoolLimits(capacity=1, share=1, queue=8))
    releases = [asyncio.Event() for _ in range(4)]
    order: list[str] = []
    noisy = [asyncio.create_task(_hold(pool, "noisy", releases[i], order)) for i in range(3)]
    await _settle()
    quiet = asyncio.create_task(_hold(pool, "quiet", releases[3], order))
    await _settle()
    for release in releases:
        release.set()
    await asyncio.gather(*noisy, quiet)
    assert order == ["noisy", "noisy", "quiet", "noisy"]  # turns alternate: one queued noisy call, then quiet


async def test_a_full_queue_is_refused_at_once_and_counted() -> None:
    pool = FairShare("searches", PoolLimits(capacity=1, share=1, queue=2))
    release, order = asyncio.Event(), list[str]()
    tasks = [asyncio.create_task(_hold(pool, "noisy", release, order)) for _ in range(3)]
    await _settle()
    with pytest.raises(ResourceExhausted) as refused:
        await pool.acquire("noisy")
    assert refused.value.reason == "TENANT_CONCURRENCY_LIMIT"
    assert refused.value.metadata == {"tenant": "noisy", "limit": "3"}
    assert pool.refused == {"noisy": 1}
    release.set()
    await asyncio.gather(*tasks)


async def test_waiting_tenants_take_turns_whatever_their_queue_length() -> None:
    pool = FairShare("writes", PoolLimits(capacity=1, share=1, queue=100))
    gate, order = asyncio.Event(), list[str]()
    first = asyncio.create_task(_hold(pool, "a", gate, order))
    await _settle()
    tasks = [asyncio.create_task(_hold(pool, "a", gate, order)) for _ in range(5)]
    await _settle()
    tasks += [asyncio.create_task(_hold(pool, "b", gate, order)) for _ in range(2)]
    await _settle()
    gate.set()
    await asyncio.gather(first, *tasks)
    assert order == ["a", "a", "b", "a", "b", "a", "a", "a"]


async def test_a_weight_gives_more_turns() -> None:
    pool = FairShare("writes", PoolLimits(capacity=1, share=1, queue=100), weights={"big": 2})
    gate, order = asyncio.Event(), list[str]()
    first = asyncio.create_task(_hold(pool, "small", gate, order))
    await _settle()
    go = asyncio.Event()
    tasks = [asyncio.create_task(_hold(pool, "big", go, order)) for _ in range(4)]
    tasks += [asyncio.create_task(_hold(pool, "small", go, order)) for _ in range(2)]
    await _settle()
    gate.set()
    go.set()
    await asyncio.gather(first, *tasks)
    assert order == ["small", "big", "big", "small", "big", "big", "small"]


async def test_a_waiter_that_gives_up_leaves_the_queue() -> None:
    pool = FairShare("searches", PoolLimits(capacity=1, share=1, queue=2))
    release, order = asyncio.Event(), list[str]()
    holder = asyncio.create_task(_hold(pool, "a", release, order))
    await _settle()
    waiter = asyncio.create_task(_hold(pool, "a", release, order))
    await _settle()
    assert pool.waiting("a") == 1
    waiter.cancel()
    await _settle()
    assert pool.waiting("a") == 0
    release.set()
    await holder
    assert pool.running("a") == 0
    async with pool.slot("b"):
        assert pool.running("b") == 1


def test_limits_must_make_sense() -> None:
    with pytest.raises(ValueError, match="capacity"):
        PoolLimits(capacity=0, share=1, queue=0)


@pytest.mark.parametrize(
    ("duty", "window", "max_rest"), [(0.0, 1.0, 1.0), (1.5, 1.0, 1.0), (0.5, -1.0, 1.0), (0.5, 1.0, -0.1)]
)
def test_pacing_refuses_a_duty_outside_0_to_1_and_negative_times(
    duty: float, window: float, max_rest: float
) -> None:
    with pytest.raises(ValueError, match=r"^pacing needs") as refused:
        Pacing(duty=duty, window=window, max_rest=max_rest)
    assert str(refused.value) == "pacing needs 0 < duty <= 1, window >= 0 and max_rest >= 0"


def test_pacing_takes_a_duty_of_1_and_rests_under_a_second() -> None:
    assert Pacing(duty=1.0, window=0.0, max_rest=0.0).rest(5.0) == 0.0
    assert Pacing(duty=0.5, max_rest=0.25).rest(1.0) == 0.25


def test_activity_tells_whether_another_tenant_was_seen_lately() -> None:
    activity = Activity()
    assert not activity.others("a", within=1.0, now=0.0)
    activity.seen("a", now=0.0)
    activity.seen("a", now=1.0)
    assert not activity.others("a", within=10.0, now=1.0)  # only itself
    assert activity.others("b", within=10.0, now=1.0)
    activity.seen("b", now=2.0)
    activity.seen("b", now=3.0)
    assert activity.others("b", within=2.0, now=3.0)  # a, at 1.0
    assert not activity.others("b", within=1.5, now=3.0)
    assert activity.others("a", within=0.0, now=3.0)


def test_a_rest_is_the_call_time_scaled_by_the_duty_and_capped() -> None:
    assert Pacing(duty=0.5).rest(0.2) == pytest.approx(0.2)
    assert Pacing(duty=0.25).rest(0.1) == pytest.approx(0.3)
    assert Pacing(duty=1.0).rest(5.0) == 0.0
    assert Pacing(duty=0.5, max_rest=1.0).rest(60.0) == 1.0
    with pytest.raises(ValueError, match="duty"):
        Pacing(duty=0.0)


async def _slow_call(pool: FairShare, tenant: str, seconds: float) -> None:
    async with pool.slot(tenant):
        await asyncio.sleep(seconds)


async def test_under_contention_a_tenant_rests_after_each_call_while_others_are_served() -> None:
    pacing = Pacing(duty=0.5, window=60.0, max_rest=60.0)
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=8), pacing=pacing)
    pool.activity.seen("quiet")
    await _slow_call(pool, "noisy", 0.5)  # the noisy share now rests about 0.5 s
    assert pool.resting("noisy") == 1
    release, order = asyncio.Event(), list[str]()
    noisy = asyncio.create_task(_slow_call(pool, "noisy", 0.0))
    quiet = asyncio.create_task(_hold(pool, "quiet", release, order))
    await _settle()
    assert order == ["quiet"]  # the free capacity serves the other tenant at once
    assert pool.waiting("noisy") == 1  # the noisy call waits for its share's rest
    assert not noisy.done()
    async with asyncio.timeout(30):
        await noisy  # the rest ends and the waiting call runs by itself, the quiet one still running
    assert pool.running("quiet") == 1
    release.set()
    await quiet


async def test_a_tenant_alone_never_rests() -> None:
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=8), pacing=Pacing(window=60.0))
    await _slow_call(pool, "alone", 0.2)
    assert pool.resting("alone") == 0
    release, order = asyncio.Event(), list[str]()
    task = asyncio.create_task(_hold(pool, "alone", release, order))
    await _settle()
    assert order == ["alone"]
    release.set()
    await task


async def test_a_rest_is_waited_out_even_by_a_pool_that_queues_nothing() -> None:
    """The bulk pool queues no call (``queue=0``): a call its tenant's rest alone holds back waits for
    the rest to end instead of being refused as if the service were full (a tenant's second Reindex
    right after its first was refused with "the service runs 2 Reindex streams at once", both free)."""
    pacing = Pacing(duty=0.5, window=60.0, max_rest=60.0)
    pool = FairShare("Reindex streams", PoolLimits(capacity=2, share=1, queue=0), pacing=pacing)
    pool.activity.seen("other")
    await _slow_call(pool, "tenant", 0.3)
    assert pool.resting("tenant") == 1
    second = asyncio.create_task(_slow_call(pool, "tenant", 0.0))
    await _settle()
    assert pool.waiting("tenant") == 1  # held for the rest, not refused
    with pytest.raises(ResourceExhausted) as refused:  # a third has neither a share nor a place to wait
        await pool.acquire("tenant")
    assert "the service runs" not in refused.value.message  # two slots are free: it must not say full
    assert "waiting for its share" in refused.value.message
    async with asyncio.timeout(30):
        await second
    assert pool.refused == {"tenant": 1}


async def test_a_full_service_says_so() -> None:
    pool = FairShare("Reindex streams", PoolLimits(capacity=1, share=1, queue=0))
    release, order = asyncio.Event(), list[str]()
    held = asyncio.create_task(_hold(pool, "first", release, order))
    await _settle()
    with pytest.raises(ResourceExhausted) as refused:
        await pool.acquire("second")
    assert "the service runs 1 Reindex streams at once" in refused.value.message
    release.set()
    await held
