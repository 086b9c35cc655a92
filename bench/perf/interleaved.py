"""Scenarios measured side by side: rounds of a few calls each, in a shuffled order, one call in flight.

Measured one after another, two scenarios see different machines: other processes' load comes and
goes, and a store's state (the SQLite WAL's fill, when it checkpoints, the size of the database)
is whatever the scenarios before left. Here every scenario ("lane") gets ``calls`` calls per round,
the lanes take turns in an order shuffled each round (seeded, so a run is repeatable), and each
keeps one channel open for the whole run, so all of them share the same load, the same store state
and the same warm caches. A lane's figure is its p50 over all its calls; its ratio to a reference
lane is the median over rounds of the ratio of the two lanes' medians in that round (a paired
ratio: a round under load inflates both sides).
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message

from bench.perf import requests as factories
from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.processes import cpu_seconds
from bench.perf.scenarios import Call
from strata.loadtest import FactoryMaker, Report, RequestFactory, RequestSlot, Sample, resolve_method

CALL_TIMEOUT_SECONDS = 30.0
_CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1), ("grpc.so_reuseport", 0)]  # as strata.loadtest


@dataclass(frozen=True)
class Lane:
    """One scenario: a call against a server (``pid``: the server process, for its CPU per call)."""

    name: str
    target: str
    call: Call
    pid: int | None = None


@dataclass
class _Running:
    lane: Lane
    stub: Callable[..., Awaitable[Message]]
    factory: RequestFactory
    sequence: int = 0
    rounds: list[list[int]] = field(default_factory=list)  # nanoseconds, one list per measured round
    statuses: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    cpu_seconds: float = 0.0

    def request(self) -> Message:
        slot = RequestSlot(worker=0, sequence=self.sequence, issued=self.sequence)
        self.sequence += 1
        return self.factory(slot)


def _factory(call: Call) -> tuple[Any, RequestFactory]:
    method = resolve_method(call.method)
    if call.factory is None:
        request = method.request_from_json(json.dumps(call.data or {}))
        return method, lambda _slot: request
    maker: FactoryMaker = getattr(factories, call.factory)
    return method, maker(method, dict(call.params or {}))


async def _calls(running: _Running, count: int, *, record: bool) -> None:
    times: list[int] = []
    pid = running.lane.pid
    before = cpu_seconds(pid) if pid is not None and record else 0.0
    for _ in range(count):
        request = running.request()
        start = time.perf_counter_ns()
        try:
            await running.stub(request, timeout=CALL_TIMEOUT_SECONDS)
            status = "OK"
        except grpc.aio.AioRpcError as error:
            status = error.code().name
            if record:
                key = f"{status}: {error.details() or ''}"
                running.errors[key] = running.errors.get(key, 0) + 1
        times.append(time.perf_counter_ns() - start)
        if record:
            running.statuses.append(status)
    if record:
        running.rounds.append(times)
        if pid is not None:
            running.cpu_seconds += cpu_seconds(pid) - before


async def _interleave(
    lanes: Sequence[Lane], rounds: int, calls: int, warmup: int, seed: int
) -> tuple[list[_Running], float]:
    targets = {lane.target for lane in lanes}
    channels = {target: grpc.aio.insecure_channel(target, options=_CHANNEL_OPTIONS) for target in targets}
    try:
        running = []
        for lane in lanes:
            method, factory = _factory(lane.call)
            stub = channels[lane.target].unary_unary(
                method.path,
                request_serializer=lambda message: message.SerializeToString(),
                response_deserializer=method.response_type.FromString,
            )
            running.append(_Running(lane, stub, factory))
        for each in running:
            await _calls(each, warmup, record=False)
        shuffle = random.Random(seed)
        ticks = cpu_ticks()
        for _ in range(rounds):
            order = list(running)
            shuffle.shuffle(order)
            for each in order:
                await _calls(each, calls, record=True)
        return running, steal_percent(ticks, cpu_ticks())
    finally:
        for channel in channels.values():
            await channel.close(None)


def interleave(
    lanes: Sequence[Lane], *, rounds: int, calls: int, warmup: int = 20, seed: int = 18
) -> dict[str, Any]:
    """Run the lanes side by side; per lane a ``strata.loadtest`` report of its calls (``rps`` is one
    over its mean latency: one call in flight), its server's CPU per call, and ``per_round_ms``
    (each round's median, for :func:`paired_ratio`)."""
    running, steal = asyncio.run(_interleave(lanes, rounds, calls, warmup, seed))
    found: dict[str, Any] = {}
    for each in running:
        latencies = [t for times in each.rounds for t in times]
        sample = Sample(latencies, each.statuses, 0.0, sum(latencies) / 1e9, each.errors, warmup_calls=warmup)
        settings = {"rounds": rounds, "calls_per_round": calls, "warmup_calls": warmup, "seed": seed}
        lane = Report.from_samples(each.lane.call.method, each.lane.target, [sample], settings).to_dict()
        lane["cpu_steal_percent"] = steal
        lane["per_round_ms"] = [round(statistics.median(times) / 1e6, 4) for times in each.rounds]
        if each.lane.pid is not None and latencies:
            lane["server_cpu_us_per_call"] = round(each.cpu_seconds / len(latencies) * 1e6, 1)
        found[each.lane.name] = lane
    return found


def paired_ratio(found: dict[str, Any], name: str, reference: str) -> float:
    """The median over rounds of lane ``name``'s round median over ``reference``'s."""
    ours, theirs = found[name]["per_round_ms"], found[reference]["per_round_ms"]
    return round(float(statistics.median(a / b for a, b in zip(ours, theirs, strict=True))), 3)
