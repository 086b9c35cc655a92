"""Running a load test in one or several client processes and merging what they measured.

With ``processes > 1`` each child (started with ``spawn``) warms up, then waits at a barrier so all
of them start measuring together; the report's rate is every call over the span from the first
start to the last finish (``time.monotonic`` is one clock for every process on Linux).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
from multiprocessing.synchronize import Barrier
from typing import TypeAlias

from strata.loadtest.methods import LoadTestError, check_loopback, resolve_method
from strata.loadtest.report import Report, Sample
from strata.loadtest.runner import run_process
from strata.loadtest.spec import LoadSpec

Results: TypeAlias = "multiprocessing.Queue[tuple[int, Sample | str]]"

_START_SLACK_SECONDS = 120.0  # how long a child waits for the others to finish warming up


def run_load(spec: LoadSpec) -> Report:
    """Run ``spec`` to completion (it always ends: by count, by duration or at ``max_seconds``)."""
    spec.validate()
    check_loopback(spec.target)
    resolve_method(spec.method, spec.target)  # fail here, not in every child
    samples = [asyncio.run(run_process(spec))] if spec.processes == 1 else _run_children(spec)
    return Report.from_samples(spec.method, spec.target, samples, spec.settings())


def _child(spec: LoadSpec, index: int, barrier: Barrier, results: Results) -> None:
    async def ready() -> None:
        await asyncio.to_thread(barrier.wait, _START_SLACK_SECONDS)

    try:
        sample: Sample | str = asyncio.run(run_process(spec.share(index), spec.worker_offset(index), ready))
    except Exception as error:  # noqa: BLE001  # reported to the parent, which raises it
        barrier.abort()
        sample = f"{type(error).__name__}: {error}"
    results.put((index, sample))


def _run_children(spec: LoadSpec) -> list[Sample]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(spec.processes)
    results: Results = context.Queue()
    children = [
        context.Process(target=_child, args=(spec, i, barrier, results), daemon=True)
        for i in range(spec.processes)
    ]
    for child in children:
        child.start()
    limit = spec.seconds_limit + spec.warmup_seconds + _START_SLACK_SECONDS + spec.timeout
    samples: list[Sample] = []
    failures: list[str] = []
    try:
        for _ in children:
            _, sample = results.get(timeout=limit)
            if isinstance(sample, Sample):
                samples.append(sample)
            else:
                failures.append(str(sample))
    except queue.Empty:
        failures.append(f"a client process gave no result within {limit:.0f} s")
    finally:
        for child in children:
            child.join(timeout=5)
            if child.is_alive():
                child.terminate()
    if failures:
        raise LoadTestError("; ".join(failures))
    return samples
