"""One process's load: warm up, then call at a fixed concurrency or rate until the time or count runs out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import grpc
from google.protobuf.message import Message

from strata.loadtest.channel import open_aio_channel, open_channel
from strata.loadtest.methods import LoadTestError, Method, check_loopback, resolve_method
from strata.loadtest.report import Sample
from strata.loadtest.spec import LoadSpec, RequestFactory, RequestSlot, request_factory

StartSignal = Callable[[], Awaitable[None]]
"""Awaited between warm-up and measurement (processes start measuring together)."""

CONNECT_TIMEOUT_SECONDS = 10.0
_CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1), ("grpc.so_reuseport", 0)]


class _Phase:
    """Shared state of the workers in one phase (warm-up or measured)."""

    def __init__(self, limit: int | None, seconds: float, record: bool) -> None:
        self.limit = limit
        self.deadline = time.monotonic() + seconds
        self.record = record
        self.started = 0
        self.latencies: list[int] = []
        self.statuses: list[str] = []
        self.starts_ns: list[int] = []  # wall clock (time.time_ns) at each call's start
        self.messages: list[str] = []  # each call's error message ("" when OK)
        self.errors: dict[str, int] = {}  # "STATUS: message" -> calls that failed so

    def take(self) -> bool:
        """Claim the next call, or say the phase is over."""
        if time.monotonic() >= self.deadline or (self.limit is not None and self.started >= self.limit):
            return False
        self.started += 1
        return True


class _Caller:
    def __init__(self, spec: LoadSpec, method: Method, factory: RequestFactory, offset: int) -> None:
        self._spec = spec
        self._factory = factory
        self._offset = offset
        self._sequences = [0] * spec.concurrency
        self._issued = 0
        self._metadata = spec.metadata or None
        self._stub: Callable[..., Awaitable[Message]] | None = None
        self._method = method

    def bind(self, channel: grpc.aio.Channel) -> None:
        self._stub = channel.unary_unary(
            self._method.path,
            request_serializer=self._method.serializer(),
            response_deserializer=self._method.deserializer(),
        )

    def next_request(self, worker: int) -> Message:
        slot = RequestSlot(
            worker=self._offset + worker, sequence=self._sequences[worker], issued=self._issued
        )
        self._sequences[worker] += 1
        self._issued += 1
        return self._factory(slot)

    async def call(self, request: Message, phase: _Phase) -> None:
        assert self._stub is not None
        wall = time.time_ns()
        start = time.perf_counter_ns()
        message = ""
        try:
            await self._stub(request, timeout=self._spec.timeout, metadata=self._metadata)
            status = "OK"
        except grpc.aio.AioRpcError as error:
            status, message = error.code().name, error.details() or ""
            if phase.record:
                key = f"{status}: {message}"
                phase.errors[key] = phase.errors.get(key, 0) + 1
        elapsed = time.perf_counter_ns() - start
        if phase.record:
            phase.latencies.append(elapsed)
            phase.statuses.append(status)
            phase.starts_ns.append(wall)
            phase.messages.append(message)


async def _closed_loop(caller: _Caller, phase: _Phase, workers: int) -> None:
    async def worker(index: int) -> None:
        while phase.take():
            await caller.call(caller.next_request(index), phase)

    await asyncio.gather(*(worker(i) for i in range(workers)))


async def _fixed_rate(caller: _Caller, phase: _Phase, rate: float, in_flight: int) -> None:
    slots = asyncio.Semaphore(in_flight)
    tasks: set[asyncio.Task[None]] = set()
    start = time.monotonic()

    async def one(request: Message) -> None:
        try:
            await caller.call(request, phase)
        finally:
            slots.release()

    n = 0
    while phase.take():
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await slots.acquire()
        task = asyncio.create_task(one(caller.next_request(0)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        n += 1
    await asyncio.gather(*tasks)


async def _run_phase(caller: _Caller, spec: LoadSpec, phase: _Phase) -> None:
    if spec.rate is None:
        await _closed_loop(caller, phase, spec.concurrency)
    else:
        await _fixed_rate(caller, phase, spec.rate, spec.concurrency)


async def run_process(spec: LoadSpec, worker_offset: int = 0, ready: StartSignal | None = None) -> Sample:
    """Run ``spec`` (already this process's share) and return what was measured."""
    target = check_loopback(spec.target)
    method = resolve_method(spec.method, target, lambda: open_channel(target, spec.tls))
    caller = _Caller(spec, method, request_factory(spec, method), worker_offset)
    async with open_aio_channel(target, spec.tls, _CHANNEL_OPTIONS) as channel:
        try:
            await asyncio.wait_for(channel.channel_ready(), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            raise LoadTestError(f"cannot connect to {spec.target}") from None
        caller.bind(channel)
        warmup = _Phase(spec.warmup_requests or None, spec.warmup_seconds or spec.max_seconds, record=False)
        if spec.warmup_requests or spec.warmup_seconds:
            await _run_phase(caller, spec, warmup)
        if ready is not None:
            await ready()
        measured = _Phase(spec.requests, spec.seconds_limit, record=True)
        started = time.monotonic()
        await _run_phase(caller, spec, measured)
        finished = time.monotonic()
    return Sample(
        measured.latencies,
        measured.statuses,
        started,
        finished,
        measured.errors,
        warmup_calls=warmup.started,
        starts_ns=measured.starts_ns,
        messages=measured.messages,
    )
