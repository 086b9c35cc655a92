"""The packages `make mutation` mutates and the tests that must kill their mutants (scripts/mutation.py)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    package_root: str  # the folder that holds the package
    package: str
    mutate: tuple[str, ...]  # globs relative to the staging folder
    tests: tuple[str, ...]
    isolation: str = "forkserver"  # the integration tests run gRPC servers: not fork-safe
    exclude: tuple[str, ...] = ()  # globs of files under ``mutate`` left alone (mutmut's do_not_mutate)
    postgres: bool = False  # its tests have PostgreSQL variants the run must not skip
    # mutmut's time limits per mutant: (t + timeout_constant) x 15 s of wall clock and twice that of
    # CPU, t the covering tests' durations as measured, which leave out fixture set-up: a module whose
    # fixture starts real servers (and loads the embedder) needs the constant to cover that start
    timeout_constant: float = 1.0

    def owns(self, module: str) -> bool:
        """Whether ``module`` (a by_module key, perhaps with an older layout's suffix) is this target's."""
        path = module.split(" ", 1)[0]
        return any(fnmatch.fnmatch(path, pattern) for pattern in self.mutate) and not any(
            fnmatch.fnmatch(path, pattern) for pattern in self.exclude
        )


# strata_serving's rooms, each a target of its own (a mutant of one is judged by its own tests)
ADMISSION = (
    "strata_serving/admission.py",
    "strata_serving/fair_share.py",
    "strata_serving/fair_admission.py",
    "strata_serving/connections.py",
)
REQUEST_CHECKS = ("strata_serving/request_checks.py",)


TARGETS = (
    Target(
        "memory-domain",
        "services/memory",
        "strata_memory",
        ("strata_memory/domain/*",),
        ("tests/memory/domain",),
    ),
    Target(
        "memory-operations",
        "services/memory",
        "strata_memory",
        ("strata_memory/operations/*",),
        ("tests/memory/operations", "tests/memory/indexing/test_outbox_retries.py"),
    ),
    Target(
        "memory-indexing",
        "services/memory",
        "strata_memory",
        ("strata_memory/indexing/*",),
        (
            "tests/memory/indexing",
            "tests/memory/domain/test_indexed_text.py",
            "tests/memory/integration/test_recall_indexing.py",
            "tests/memory/integration/test_wait_searchable.py",
        ),
    ),
    Target(
        "retrieval-fusion-engine",
        "services/retrieval",
        "strata_retrieval",
        ("strata_retrieval/fusion.py", "strata_retrieval/engine.py"),
        (
            "tests/retrieval/test_fusion.py",
            "tests/retrieval/test_engine.py",
            "tests/retrieval/test_engine_scope.py",
            "tests/retrieval/test_engine_races.py",
            "tests/retrieval/test_ties.py",
        ),
    ),
    Target("memfs", "clients/python", "strata", ("strata/memfs/*",), ("tests/memfs",)),
    Target(
        "memory-store",
        "services/memory",
        "strata_memory",
        ("strata_memory/store/*",),
        (
            "tests/memory/store",
            "tests/memory/integration",
            "tests/memory/operations",
            "tests/memory/indexing/test_outbox_retries.py",  # parked jobs: listed and retried (index_jobs)
            "tests/system/test_move_to_postgres.py",
            "tests/system/test_purge.py",
            "tests/system/test_purge_reach.py",
            "tests/system/test_purge_targets.py",
            "tests/system/test_purge_residues.py",
            "tests/system/test_unique_conflicts.py",
        ),
        # revisions run once per database (alembic), before any test's mutant is switched on
        exclude=("strata_memory/store/migrations/*",),
        postgres=True,
        timeout_constant=20.0,
    ),
    Target(
        "serving-admission",
        "services/serving",
        "strata_serving",
        ADMISSION,
        (
            "tests/serving/test_fair_share.py",
            "tests/serving/test_fair_share_turns.py",
            "tests/serving/test_fair_admission.py",
            "tests/serving/test_refusal_pacing.py",
            "tests/serving/test_connections.py",
            "tests/system/test_admission.py",
            "tests/system/test_connection_hygiene.py",
            "tests/security/test_limits.py",
            "tests/security/test_auth.py",  # an admin's call is scheduled as "(admin)", not refused
        ),
        timeout_constant=10.0,
    ),
    Target(
        "serving-request-checks",
        "services/serving",
        "strata_serving",
        REQUEST_CHECKS,
        (
            "tests/serving/test_request_checks.py",
            "tests/memory/integration/test_write_contract.py",
            "tests/retrieval/test_service_errors.py",
            "tests/system/test_hostile_metadata.py",
        ),
        postgres=True,
        timeout_constant=20.0,
    ),
    Target(
        "serving",
        "services/serving",
        "strata_serving",
        ("strata_serving/*",),
        (
            "tests/serving",
            "tests/security/test_auth.py",
            "tests/security/test_key_rule.py",
            "tests/security/test_limits.py",
            "tests/security/test_limits_table.py",
            "tests/security/test_no_internal.py",
            "tests/security/test_refusing_retrieval.py",
            "tests/security/test_tls.py",
            "tests/security/test_tls_errors.py",
            "tests/system/test_drain.py",
            "tests/system/test_hostile_metadata.py",
            "tests/system/test_metrics.py",
            "tests/system/test_metrics_tenants.py",
            "tests/system/test_tracing.py",
        ),
        exclude=ADMISSION + REQUEST_CHECKS,
        timeout_constant=20.0,
    ),
)
