"""FairShare's turns and refusals where survivors of `make mutation`'s serving-admission target showed
no test looked (issue 26 item 9): a weighted tenant that gave up its last waiting call, a freed slot
offered to a tenant already at its share, and the text of each refusal."""

from __future__ import annotations

import asyncio

import pytest

from strata_serving.errors import ResourceExhausted
from strata_serving.fair_share import FairShare, PoolLimits


async def _hold(pool: FairShare, tenant: str, release: asyncio.Event, order: list[str]) -> None:
    async with pool.slot(tenant):
        order.append(tenant)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_tenant_that_gave_up_its_last_waiting_call_comes_back_with_its_full_weight() -> None:
    pool = FairShare("writes", PoolLimits(capacity=1, share=1, queue=100), weights={"big": 3})
    gate, go, order = asyncio.Event(), asyncio.Event(), list[str]()
    first = asyncio.create_task(_hold(pool, "small", gate, order))
    await _settle()
    running = asyncio.create_task(_hold(pool, "big", go, order))
    gives_up = asyncio.create_task(_hold(pool, "big", go, order))
    await _settle()
    smalls = [asyncio.create_task(_hold(pool, "small", go, order)) for _ in range(3)]
    await _settle()
    gate.set()  # big's turn: one of its 3 turns spent, its other call still waiting
    await _settle()
    gives_up.cancel()  # big's queue empties: it leaves the turns, and its credit with them
    await _settle()
    assert gives_up.cancelled()
    bigs = [asyncio.create_task(_hold(pool, "big", go, order)) for _ in range(3)]
    await _settle()
    go.set()
    await asyncio.gather(first, running, *smalls, *bigs)
    # back in the turns after small, big takes 3 turns in a row again, not the 2 it had left
    assert order == ["small", "big", "small", "big", "big", "big", "small", "small"]


async def test_a_freed_slot_is_not_given_to_a_waiting_tenant_already_at_its_share() -> None:
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=4))
    a_release, b_release, order = asyncio.Event(), asyncio.Event(), list[str]()
    a_running = asyncio.create_task(_hold(pool, "a", a_release, order))
    b_running = asyncio.create_task(_hold(pool, "b", b_release, order))
    await _settle()
    a_waiting = asyncio.create_task(_hold(pool, "a", a_release, order))
    await _settle()
    b_release.set()  # a slot is free, and a waits, but a already runs its share
    await b_running
    await _settle()
    assert (pool.running("a"), pool.waiting("a")) == (1, 1)
    a_release.set()
    await asyncio.gather(a_running, a_waiting)
    assert order == ["a", "b", "a"]


async def test_each_refusal_says_which_limit_the_tenant_reached() -> None:
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=1))
    release, order = asyncio.Event(), list[str]()
    tasks = [asyncio.create_task(_hold(pool, "noisy", release, order)) for _ in range(2)]
    tasks.append(asyncio.create_task(_hold(pool, "other", release, order)))
    await _settle()
    with pytest.raises(ResourceExhausted) as at_share:
        await pool.acquire("noisy")
    assert str(at_share.value) == (
        "tenant 'noisy' already has 1 searches running and 1 waiting (at most 1 and 1); retry with backoff"
    )
    full = FairShare("searches", PoolLimits(capacity=1, share=1, queue=0))
    async with full.slot("a"):
        with pytest.raises(ResourceExhausted) as at_capacity:
            await full.acquire("b")
    assert str(at_capacity.value) == (
        "the service runs 1 searches at once and tenant 'b' has 0 waiting (at most 0); retry with backoff"
    )
    release.set()
    await asyncio.gather(*tasks)


async def test_three_tenants_take_turns_in_the_order_they_came() -> None:
    pool = FairShare("writes", PoolLimits(capacity=1, share=1, queue=100))
    gate, go, order = asyncio.Event(), asyncio.Event(), list[str]()
    first = asyncio.create_task(_hold(pool, "x", gate, order))
    await _settle()
    tasks = []
    for tenant in ("a", "a", "b", "c", "a"):
        tasks.append(asyncio.create_task(_hold(pool, tenant, go, order)))
        await _settle()
    gate.set()
    go.set()
    await asyncio.gather(first, *tasks)
    assert order == ["x", "a", "b", "c", "a", "a"]  # after a turn, a goes to the back of the line


async def test_a_slot_granted_to_a_call_cancelled_at_that_moment_is_handed_on() -> None:
    pool = FairShare("searches", PoolLimits(capacity=1, share=1, queue=2))
    await pool.acquire("x")
    granted = asyncio.create_task(pool.acquire("y"))
    await _settle()
    pool.release("x")  # the slot is y's now; y's task has not run since
    granted.cancel()
    with pytest.raises(asyncio.CancelledError):
        await granted
    assert (pool.running("y"), pool.waiting("y")) == (0, 0)
    await asyncio.wait_for(pool.acquire("z"), timeout=1)  # the slot is free again
    assert pool.running("z") == 1


async def test_refusals_are_counted_per_tenant() -> None:
    pool = FairShare("searches", PoolLimits(capacity=1, share=1, queue=0))
    await pool.acquire("noisy")
    for tenant in ("noisy", "noisy", "quiet"):
        with pytest.raises(ResourceExhausted):
            await pool.acquire(tenant)
    assert pool.refused == {"noisy": 2, "quiet": 1}
