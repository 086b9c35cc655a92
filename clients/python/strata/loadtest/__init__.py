"""``strata loadtest``: a gRPC load generator for either Strata service (ghz is not installable here).

Python ``grpc.aio`` clients call one unary method at a fixed concurrency or rate, for a duration or
a request count (always bounded), after an optional warm-up, from one or several processes, and
only against loopback addresses, in plaintext or TLS/mTLS, with any metadata (API key, tenant,
headers). The result is a ghz-like :class:`Report`::

    from strata.loadtest import LoadSpec, run_load

    report = run_load(LoadSpec(target="127.0.0.1:50051", method="grpc.health.v1.Health/Check",
                               concurrency=8, duration=5.0, warmup_seconds=1.0))
    print(report.format())
"""

from strata.loadtest.channel import TlsSpec
from strata.loadtest.methods import LoadTestError, Method, check_loopback, resolve_method
from strata.loadtest.processes import run_load
from strata.loadtest.report import Report, Sample
from strata.loadtest.spec import FactoryMaker, LoadSpec, RequestFactory, RequestSlot

__all__ = [
    "FactoryMaker",
    "LoadSpec",
    "LoadTestError",
    "Method",
    "Report",
    "RequestFactory",
    "RequestSlot",
    "Sample",
    "TlsSpec",
    "check_loopback",
    "resolve_method",
    "run_load",
]
