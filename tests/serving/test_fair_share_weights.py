"""FairShare's weighted turns when a tenant gives up its last waiting call (issue 26 item 9: a
survivor of `make mutation`'s serving-admission target kept the tenant's spent credit then)."""

from __future__ import annotations

import asyncio

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
