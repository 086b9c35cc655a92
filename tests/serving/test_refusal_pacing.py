"""AdmissionInterceptor's refusals (strata_serving.fair_admission), exactly: the size bound, the budget.

The token bucket is a rule over time: here it runs on a clock the test turns (the module's ``time``
replaced by it), so each hold is an exact figure, never a measured duration. How many refusals of a
tenant are held at once is counted by which holds are still pending after one turn of the event
loop. Refusals counted past 10,000 tenants go through a real grpc.aio server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from google.protobuf.wrappers_pb2 import StringValue

from strata_serving import fair_admission
from strata_serving.fair_admission import (
    MAX_COUNTED_TENANTS,
    AdmissionInterceptor,
    MethodRule,
    RefusalBudget,
    _Pacing,
)
from strata_serving.fair_share import FairShare, PoolLimits
from strata_serving.server import GrpcServer

BUDGET = RefusalBudget(per_second=10, burst=3, max_delay=1.0, max_held=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    turned = Clock()
    monkeypatch.setattr(fair_admission, "time", SimpleNamespace(monotonic=turned.monotonic))
    return turned


def test_a_tenant_is_refused_at_once_for_its_burst_then_held_a_refill_per_refusal(clock: Clock) -> None:
    pacing = _Pacing(BUDGET)
    delays = [pacing.delay("noisy") for _ in range(5)]
    assert delays == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])
    assert delays[:3] == [0.0, 0.0, 0.0]  # not a negative hold: no hold at all
    assert pacing.delay("quiet") == 0.0  # each tenant has its own bucket


def test_the_bucket_refills_at_per_second_up_to_the_burst(clock: Clock) -> None:
    pacing = _Pacing(BUDGET)
    for _ in range(5):
        pacing.delay("noisy")  # 3 free, then 2 owed: the bucket at -2
    clock.now += 0.25  # 2.5 refusals' worth refilled: -2 + 2.5 - 1 = -0.5 owed
    assert pacing.delay("noisy") == pytest.approx(0.05)
    clock.now += 3_600  # an hour idle refills the burst, no more
    assert [pacing.delay("noisy") for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_part_of_a_refusal_left_in_the_bucket_is_no_hold(clock: Clock) -> None:
    pacing = _Pacing(BUDGET)
    for _ in range(3):
        pacing.delay("noisy")  # the burst spent: 0 left
    clock.now += 0.15  # 1.5 refilled, this refusal takes 1: 0.5 left
    assert pacing.delay("noisy") == 0.0


def test_no_refusal_is_held_longer_than_max_delay(clock: Clock) -> None:
    pacing = _Pacing(BUDGET)
    delays = [pacing.delay("noisy") for _ in range(40)]
    assert max(delays) == pytest.approx(1.0)
    assert delays[-1] == pytest.approx(1.0)
    clock.now += 0.1  # the debt was capped at max_delay's worth: one refill shortens the next hold
    assert pacing.delay("noisy") == pytest.approx(1.0)
    clock.now += 0.5
    assert pacing.delay("noisy") == pytest.approx(0.6)


async def test_at_most_max_held_refusals_of_a_tenant_wait_at_once_and_the_rest_are_answered(
    clock: Clock,
) -> None:
    pacing = _Pacing(RefusalBudget(per_second=10, burst=1, max_delay=0.05, max_held=2))
    for wave in range(2):  # the second wave shows the first one's holds were given back
        pacing.delay("noisy")  # the burst spent: every refusal below is owed a hold
        holds = [asyncio.create_task(pacing.hold("noisy")) for _ in range(5)]
        await asyncio.sleep(0)  # each hold runs to its sleep, or returns
        pending = [task for task in holds if not task.done()]
        assert len(pending) == 2, f"wave {wave}"
        await asyncio.gather(*holds)  # and every held refusal is answered in the end
    assert pacing.delay("quiet") == 0.0


def test_the_buckets_of_more_than_10_000_tenants_are_pruned_of_the_refilled(clock: Clock) -> None:
    pacing = _Pacing(BUDGET)
    for number in range(MAX_COUNTED_TENANTS):
        assert pacing.delay(f"t{number}") == 0.0
    clock.now += 1.0  # every bucket refilled
    assert pacing.delay("one-more") == 0.0
    assert [pacing.delay("t0") for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_a_bucket_not_yet_refilled_is_kept_when_the_buckets_are_pruned(clock: Clock) -> None:
    pacing = _Pacing(RefusalBudget(per_second=0.5, burst=3, max_delay=10.0, max_held=2))
    assert [pacing.delay("t0") for _ in range(3)] == [0.0, 0.0, 0.0]  # t0's burst spent
    for number in range(1, MAX_COUNTED_TENANTS):
        pacing.delay(f"t{number}")
    clock.now += 2.0  # the others are full again; t0 has 1 of its 3 back
    assert pacing.delay("one-more") == 0.0  # past 10,000 buckets: the refilled ones are pruned
    assert [pacing.delay("t0") for _ in range(2)] == pytest.approx([0.0, 2.0])  # its debt is kept


SERVICE = "strata.test.Paced"
SEARCH = f"/{SERVICE}/Search"


@pytest.fixture
async def served() -> AsyncIterator[tuple[GrpcServer, AdmissionInterceptor]]:
    admission = AdmissionInterceptor({SEARCH: MethodRule(16)}, {})

    async def search(request: StringValue, context: grpc.aio.ServicerContext[Any, Any]) -> StringValue:
        return request

    def register(server: grpc.aio.Server) -> None:
        handler = grpc.unary_unary_rpc_method_handler(
            search, StringValue.FromString, StringValue.SerializeToString
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Search": handler}),))

    server = GrpcServer(
        "127.0.0.1:0", service_names=[SERVICE], register=register, extra_interceptors=[admission]
    )
    await server.start()
    yield server, admission
    await server.stop(0)


async def test_past_10_000_counted_tenants_a_counted_one_keeps_its_count_and_a_new_one_is_other(
    served: tuple[GrpcServer, AdmissionInterceptor],
) -> None:
    server, admission = served
    admission.refused.update({f"t{number}": 1 for number in range(MAX_COUNTED_TENANTS)})
    async with grpc.aio.insecure_channel(server.address) as channel:
        call = channel.unary_unary(SEARCH, None, None)
        for tenant in ("t7", "newcomer"):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(b"\x0a\x20" + b"x" * 32, metadata=(("x-strata-tenant", tenant),), timeout=10)
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert admission.refused["t7"] == 2
    assert admission.refused["(other)"] == 1
    assert "newcomer" not in admission.refused
    assert len(admission.refused) == MAX_COUNTED_TENANTS + 1


async def test_a_request_of_exactly_the_largest_size_is_admitted_and_one_byte_more_is_not(
    served: tuple[GrpcServer, AdmissionInterceptor],
) -> None:
    server, admission = served
    largest = StringValue(value="x" * 14).SerializeToString()
    assert len(largest) == 16  # the method's MethodRule(16)
    async with grpc.aio.insecure_channel(server.address) as channel:
        call = channel.unary_unary(SEARCH, None, None)
        assert await call(largest, timeout=10) == largest
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(StringValue(value="x" * 15).SerializeToString(), timeout=10)
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.details() == "the request is 17 bytes; /strata.test.Paced/Search takes at most 16"
    assert admission.refused == {"default": 1}


WATCH = f"/{SERVICE}/Watch"


async def test_a_streamed_response_waits_for_its_tenants_share_like_a_unary_call() -> None:
    pool = FairShare("searches", PoolLimits(capacity=1, share=1, queue=0))
    admission = AdmissionInterceptor({WATCH: MethodRule(64, "searches")}, {"searches": pool})

    async def watch(
        request: StringValue, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[StringValue]:
        yield request

    def register(server: grpc.aio.Server) -> None:
        handler = grpc.unary_stream_rpc_method_handler(
            watch, StringValue.FromString, StringValue.SerializeToString
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Watch": handler}),))

    server = GrpcServer(
        "127.0.0.1:0", service_names=[SERVICE], register=register, extra_interceptors=[admission]
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stream = channel.unary_stream(WATCH, StringValue.SerializeToString, StringValue.FromString)
            assert [item.value async for item in stream(StringValue(value="one"), timeout=10)] == ["one"]
            async with pool.slot("default"):  # the tenant's one share is taken: no queue to wait in
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    _ = [item async for item in stream(StringValue(value="two"), timeout=10)]
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert admission.refused == {"default": 1}
    finally:
        await server.stop(0)
