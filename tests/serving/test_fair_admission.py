"""AdmissionInterceptor through a real grpc.aio server: a tenant beyond its share and queue is refused
at once while another tenant is served; an oversized request is refused before it is parsed; refusals
are counted against the tenant that sent them; with pacing, a tenant rests between its calls while
another tenant is active, and never when alone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf.wrappers_pb2 import StringValue

from strata_serving.fair_admission import AdmissionInterceptor, MethodRule, RefusalBudget
from strata_serving.fair_share import Activity, FairShare, Pacing, PoolLimits
from strata_serving.server import GrpcServer
from strata_serving.status import error_info_from

SERVICE = "strata.test.Search"
SEARCH = f"/{SERVICE}/Search"
STREAM = f"/{SERVICE}/Watch"
READ = f"/{SERVICE}/Read"
SLOW_SECONDS = 1.0


class Backend:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started: list[str] = []
        self.one_started = asyncio.Event()

    async def search(self, request: StringValue, context: grpc.aio.ServicerContext[Any, Any]) -> StringValue:
        self.started.append(request.value)
        self.one_started.set()
        if request.value.startswith("block"):
            await self.release.wait()
        if request.value.startswith("slow"):
            await asyncio.sleep(SLOW_SECONDS)
        return StringValue(value=f"found {request.value}")

    async def watch(
        self, request: StringValue, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[StringValue]:
        caller = dict(context.invocation_metadata() or ())["x-strata-tenant"]
        for i in range(3):
            yield StringValue(value=f"{request.value} {i} for {caller}")


@pytest.fixture
async def served() -> AsyncIterator[tuple[GrpcServer, Backend, AdmissionInterceptor]]:
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=1))
    async for found in _serve(pool, None):
        yield found


@pytest.fixture
async def paced() -> AsyncIterator[tuple[GrpcServer, Backend, AdmissionInterceptor]]:
    activity = Activity()
    pacing = Pacing(duty=0.5, window=60.0, max_rest=60.0)
    pool = FairShare("searches", PoolLimits(capacity=2, share=1, queue=1), pacing=pacing, activity=activity)
    async for found in _serve(pool, activity):
        yield found


async def _serve(
    pool: FairShare, activity: Activity | None
) -> AsyncIterator[tuple[GrpcServer, Backend, AdmissionInterceptor]]:
    backend = Backend()
    rules = {
        SEARCH: MethodRule(1024, "searches"),
        STREAM: MethodRule(1024, "searches"),
        READ: MethodRule(1024, None),
    }
    refusals = RefusalBudget(per_second=10, burst=3, max_delay=0.5, max_held=8)
    admission = AdmissionInterceptor(rules, {"searches": pool}, refusals=refusals, activity=activity)

    def register(server: grpc.aio.Server) -> None:
        handlers = {
            "Search": grpc.unary_unary_rpc_method_handler(
                backend.search, StringValue.FromString, StringValue.SerializeToString
            ),
            "Read": grpc.unary_unary_rpc_method_handler(
                backend.search, StringValue.FromString, StringValue.SerializeToString
            ),
            "Watch": grpc.unary_stream_rpc_method_handler(
                backend.watch, StringValue.FromString, StringValue.SerializeToString
            ),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))

    server = GrpcServer(
        "127.0.0.1:0", service_names=[SERVICE], register=register, extra_interceptors=[admission]
    )
    await server.start()
    yield server, backend, admission
    backend.release.set()
    await server.stop(0)


def _tenant(name: str) -> tuple[tuple[str, str]]:
    return (("x-strata-tenant", name),)


async def test_a_tenant_past_its_share_and_queue_is_refused_while_another_is_served(
    served: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, backend, admission = served
    async with grpc.aio.insecure_channel(server.address) as channel:
        search = channel.unary_unary(SEARCH, StringValue.SerializeToString, StringValue.FromString)
        noisy = [
            asyncio.ensure_future(
                search(StringValue(value=f"block {i}"), metadata=_tenant("noisy"), timeout=10)
            )
            for i in range(2)
        ]
        async with asyncio.timeout(5):
            await backend.one_started.wait()
        await asyncio.sleep(0.1)
        assert len(backend.started) == 1  # the second waits: the share is 1, even with a slot idle
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await search(StringValue(value="block 3"), metadata=_tenant("noisy"), timeout=10)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        info = error_info_from(refused.value.trailing_metadata())
        assert info is not None
        assert info.reason == "TENANT_CONCURRENCY_LIMIT"
        assert dict(info.metadata) == {"tenant": "noisy", "limit": "2"}
        quiet = await search(StringValue(value="quiet"), metadata=_tenant("quiet"), timeout=2)
        assert quiet.value == "found quiet"  # served while the noisy calls still hold and wait
        backend.release.set()
        assert sorted(reply.value for reply in await asyncio.gather(*noisy)) == [
            "found block 0",
            "found block 1",
        ]
    assert admission.refused == {"noisy": 1}


async def test_an_oversized_request_is_refused_before_it_is_parsed(
    served: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, backend, admission = served
    async with grpc.aio.insecure_channel(server.address) as channel:
        raw = channel.unary_unary(SEARCH, None, None)
        with pytest.raises(grpc.aio.AioRpcError) as big:
            await raw(b"\xff" * 200_000, metadata=_tenant("noisy"), timeout=5)  # not a valid message
        assert big.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "200,000 bytes" in (big.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as garbage:
            await raw(b"\xff" * 10, metadata=_tenant("noisy"), timeout=5)
        assert garbage.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert garbage.value.details() == "the request could not be parsed"
    assert backend.started == []
    assert admission.refused == {"noisy": 1}


async def test_a_streamed_response_is_admitted_and_delivered(
    served: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, _, admission = served
    async with grpc.aio.insecure_channel(server.address) as channel:
        watch = channel.unary_stream(STREAM, StringValue.SerializeToString, StringValue.FromString)
        replies = [reply.value async for reply in watch(StringValue(value="w"), metadata=_tenant("a"))]
    assert replies == ["w 0 for a", "w 1 for a", "w 2 for a"]  # the handler has its call's context
    assert admission.pools["searches"].running("a") == 0


def test_rules_must_name_existing_pools() -> None:
    with pytest.raises(ValueError, match="pools that do not exist"):
        AdmissionInterceptor({SEARCH: MethodRule(10, "nowhere")}, {})


async def test_a_tenant_past_its_refusal_budget_waits_for_each_refusal_and_no_one_else_does(
    served: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, _, admission = served
    oversized = b"\xff" * 2_000

    async def refusal_seconds(tenant: str) -> float:
        started = time.perf_counter()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await raw(oversized, metadata=_tenant(tenant), timeout=5)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        return time.perf_counter() - started

    async with grpc.aio.insecure_channel(server.address) as channel:
        raw = channel.unary_unary(SEARCH, None, None)
        noisy = [await refusal_seconds("noisy") for _ in range(6)]
        quiet = await refusal_seconds("quiet")
    assert max(noisy[:3]) < 0.05  # the burst: refused at once
    assert min(noisy[3:]) > 0.05  # past it, one refusal per 1/10 s
    assert quiet < 0.05  # another tenant's budget is its own
    assert admission.refused == {"noisy": 6, "quiet": 1}


async def test_under_contention_a_tenant_rests_between_its_calls_and_the_other_is_served(
    paced: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, backend, admission = paced
    pool = admission.pools["searches"]
    async with grpc.aio.insecure_channel(server.address) as channel:
        search = channel.unary_unary(SEARCH, StringValue.SerializeToString, StringValue.FromString)
        read = channel.unary_unary(READ, StringValue.SerializeToString, StringValue.FromString)
        await read(StringValue(value="quiet read"), metadata=_tenant("quiet"), timeout=10)  # unpooled, seen
        await search(StringValue(value="slow 1"), metadata=_tenant("noisy"), timeout=10)
        assert pool.resting("noisy") == 1  # its share rests about as long as the call took (1 s)
        second = asyncio.ensure_future(
            search(StringValue(value="noisy 2"), metadata=_tenant("noisy"), timeout=30)
        )
        async with asyncio.timeout(10):
            while not pool.waiting("noisy"):  # noqa: ASYNC110 - the pool's state has no event to wait on
                await asyncio.sleep(0.01)
        quiet = await search(StringValue(value="quiet 1"), metadata=_tenant("quiet"), timeout=10)
        assert quiet.value == "found quiet 1"  # the other tenant is served at once meanwhile
        assert "noisy 2" not in backend.started  # still resting
        assert (await second).value == "found noisy 2"  # and served when the rest is over
    assert pool.running("noisy") == pool.waiting("noisy") == 0


async def test_a_tenant_alone_is_never_paced(
    paced: tuple[GrpcServer, Backend, AdmissionInterceptor],
) -> None:
    server, _, admission = paced
    async with grpc.aio.insecure_channel(server.address) as channel:
        search = channel.unary_unary(SEARCH, StringValue.SerializeToString, StringValue.FromString)
        await search(StringValue(value="slow 1"), metadata=_tenant("alone"), timeout=10)
        assert admission.pools["searches"].resting("alone") == 0
