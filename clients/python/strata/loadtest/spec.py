"""What a load test does: the method, how requests are made, how hard and for how long to call."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from strata.loadtest.channel import TlsSpec
from strata.loadtest.methods import LoadTestError, Method

MAX_SECONDS = 3600.0
MAX_REQUESTS = 10_000_000
MAX_CONCURRENCY = 1024
MAX_PROCESSES = 64
DEFAULT_MAX_SECONDS = 600.0  # a count-only run still stops after this long


@dataclass(frozen=True)
class RequestSlot:
    """Who asks for a request: ``worker`` (unique across processes; 0 in fixed-rate mode), that
    worker's ``sequence`` number (from 0, warm-up included) and ``issued`` (this process's count)."""

    worker: int
    sequence: int
    issued: int


RequestFactory = Callable[[RequestSlot], Message]
"""Makes the request for one call."""

FactoryMaker = Callable[[Method, Mapping[str, Any]], RequestFactory]
"""``module:attribute`` named by ``LoadSpec.factory``: builds a factory from the method and params."""


@dataclass(frozen=True)
class LoadSpec:
    """A load test. Set ``duration`` or ``requests`` (or both: whichever ends first).

    Requests are the JSON ``data`` for every call, or made per call by ``factory`` (``module:attr``,
    a :data:`FactoryMaker`, called once per process with ``params``). ``concurrency`` calls are in
    flight (closed loop) unless ``rate`` is set: then calls start at that many per second overall,
    with at most ``concurrency`` in flight. Warm-up calls are made first and not measured.
    ``metadata`` goes with every call (API key, tenant, ``-H`` headers); ``tls`` secures the channel.
    """

    target: str
    method: str
    data: str = "{}"
    factory: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    concurrency: int = 1
    rate: float | None = None
    duration: float | None = None
    requests: int | None = None
    warmup_seconds: float = 0.0
    warmup_requests: int = 0
    processes: int = 1
    timeout: float = 20.0
    metadata: tuple[tuple[str, str], ...] = ()
    max_seconds: float = DEFAULT_MAX_SECONDS
    tls: TlsSpec | None = None

    def validate(self) -> LoadSpec:
        if self.duration is None and self.requests is None:
            raise LoadTestError("set a duration or a request count")
        if self.duration is not None and not 0 < self.duration <= MAX_SECONDS:
            raise LoadTestError(f"duration must be in (0, {MAX_SECONDS:g}] seconds")
        if self.requests is not None and not 0 < self.requests <= MAX_REQUESTS:
            raise LoadTestError(f"requests must be in [1, {MAX_REQUESTS}]")
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise LoadTestError(f"concurrency must be in [1, {MAX_CONCURRENCY}]")
        if not 1 <= self.processes <= min(MAX_PROCESSES, self.concurrency):
            raise LoadTestError("processes must be at least 1 and at most the concurrency")
        if self.requests is not None and self.requests < self.processes:
            raise LoadTestError("ask for at least one request per process")
        if self.rate is not None and not self.rate > 0:
            raise LoadTestError("rate must be positive")
        if self.warmup_seconds < 0 or self.warmup_requests < 0 or self.warmup_seconds > MAX_SECONDS:
            raise LoadTestError("warm-up must be non-negative and bounded")
        if not 0 < self.timeout <= MAX_SECONDS or not 0 < self.max_seconds <= MAX_SECONDS:
            raise LoadTestError("timeouts must be positive and bounded")
        if self.tls is not None:
            self.tls.validate()
        return self

    @property
    def seconds_limit(self) -> float:
        """How long the measured phase may last at most."""
        return min(self.duration or self.max_seconds, self.max_seconds)

    def share(self, index: int) -> LoadSpec:
        """This spec's part for process ``index`` of ``processes``: concurrency, rate and count split."""

        def part(total: int) -> int:
            return total // self.processes + (1 if index < total % self.processes else 0)

        return LoadSpec(
            **{
                **self.__dict__,
                "concurrency": part(self.concurrency),
                "rate": None if self.rate is None else self.rate / self.processes,
                "requests": None if self.requests is None else max(part(self.requests), 0),
                "warmup_requests": part(self.warmup_requests),
                "processes": 1,
            }
        )

    def worker_offset(self, index: int) -> int:
        """The first worker number of process ``index`` (so worker numbers are unique overall)."""
        return sum(self.share(i).concurrency for i in range(index))

    def settings(self) -> dict[str, Any]:
        """The knobs, for the report."""
        keys = ("concurrency", "rate", "duration", "requests", "warmup_seconds", "warmup_requests")
        return {key: getattr(self, key) for key in (*keys, "processes", "timeout")} | {
            "request": "factory " + self.factory if self.factory else json.loads(self.data or "{}"),
            "tls": self.tls is not None,
            "metadata_keys": sorted({key for key, _ in self.metadata}),  # values may be secrets
        }


def request_factory(spec: LoadSpec, method: Method) -> RequestFactory:
    """The per-call request maker: the parsed JSON every time, or the named factory's."""
    if spec.factory is None:
        request = method.request_from_json(spec.data)
        return lambda _slot: request
    module_name, _, attribute = spec.factory.partition(":")
    try:
        maker: FactoryMaker = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise LoadTestError(f"cannot load request factory {spec.factory!r}: {error}") from None
    return maker(method, spec.params)
