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

    def owns(self, module: str) -> bool:
        """Whether ``module`` (a by_module key, perhaps with an older layout's suffix) is this target's."""
        path = module.split(" ", 1)[0]
        return any(fnmatch.fnmatch(path, pattern) for pattern in self.mutate)


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
)
