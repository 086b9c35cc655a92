"""Print the crash and outage matrix: `python -m scripts.fault_matrix [--examples N] [--out FILE]`.

Runs every scenario of ``tests/security/faults.py`` against real services (killing processes with
SIGKILL where the row says so), then fuzzes every RPC of both services, and prints one Markdown
table: writes attempted / acknowledged / present after recovery, and requests fuzzed / bad statuses.
Exits 1 if any row failed. The same scenarios run as assertions in ``make test``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security import faults, hostile_faults
from tests.security.conftest import ADMIN_KEY, bearer
from tests.security.fuzz_targets import (
    ADMIN,
    MEMORY,
    RETRIEVAL,
    TENANT,
    fuzz_method,
    ordered,
    running_targets,
)
from tests.security.fuzzing import FuzzReport
from tests.security.integrity import store_problems

ADMIN_METADATA = bearer(ADMIN_KEY)


async def scenario_rows(root: Path, model_cache: Path) -> list[faults.Row]:
    return [
        await faults.memory_kill_9_under_write_load(root / "a"),
        await faults.retrieval_kill_9_during_indexing(root / "b", model_cache),
        await faults.retrieval_down(root / "c"),
        await faults.store_refuses_writes(root / "d", "read-only"),
        await faults.store_refuses_writes(root / "e", "disk full"),
        await faults.concurrent_writers(root / "f", writers=64, etags=False),
        await faults.concurrent_writers(root / "g", writers=64, etags=True),
        *await hostile_rows(root, model_cache),
    ]


async def hostile_rows(root: Path, model_cache: Path) -> list[faults.Row]:
    """A hostile tenant: poison messages, a Reindex cancelled mid-stream, a 6,000-message flood."""
    embedder = OnnxSentenceEmbedder.load(model_cache, threads=2, batch_size=16)
    return [
        await hostile_faults.poison_message(root / "h", embedder),
        await hostile_faults.cancelled_reindex(root / "i", embedder),
        await hostile_faults.tenant_flood(root / "j", embedder, noisy=6_000),
    ]


def fuzz_row(root: Path, model_cache: Path, examples: int) -> faults.Row:
    """Every RPC of both services, ``examples`` hypothesis requests each; bad = INTERNAL/UNKNOWN."""
    embedder = OnnxSentenceEmbedder.load(model_cache, threads=2, batch_size=16)
    report = FuzzReport()
    started = time.monotonic()
    with running_targets(root, embedder) as targets:
        plan = [
            (targets.memory, MEMORY, TENANT),
            (targets.memory, ADMIN, ADMIN_METADATA),
            (targets.retrieval, RETRIEVAL, ()),
        ]
        for address, service, metadata in plan:
            for method in ordered(service):
                with contextlib.suppress(AssertionError):  # counted in report.bad; go on measuring
                    fuzz_method(
                        address,
                        service=service,
                        method=method,
                        pool=targets.pool,
                        metadata=metadata,
                        callers=targets.callers if service is MEMORY else (),
                        report=report,
                        examples=examples,
                    )
        with sqlite3.connect(targets.database) as conn:
            problems = store_problems(conn)
    methods = len(MEMORY.methods) + len(ADMIN.methods) + len(RETRIEVAL.methods)
    row = faults.Row(
        "fuzzed requests, every RPC of both services",
        attempted=report.calls,
        acknowledged=report.codes.get("OK", 0),
        present=report.calls - len(report.bad),
    )
    row.problems = [f"{len(report.bad)} bad statuses, first: {report.bad[0][:2]}"] if report.bad else []
    row.problems += problems
    row.problems += (
        [f"{len(report.leaks)} cross-tenant leaks, first: {report.leaks[0][:2]}"] if report.leaks else []
    )
    top = ", ".join(f"{code} {n}" for code, n in report.codes.most_common(4))
    row.notes = (
        f"{methods} RPCs x {examples}: bad statuses (INTERNAL/UNKNOWN) {len(report.bad)}; "
        f"{top}; store intact; {time.monotonic() - started:.0f} s"
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=25, help="fuzzed requests per RPC (default 25)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # the services' expected warnings would bury the table
    with tempfile.TemporaryDirectory(prefix="strata-faults-") as folder:
        root = Path(folder)
        model_cache = Path.home() / ".cache" / "strata" / "models"
        rows = asyncio.run(scenario_rows(root, model_cache))
        rows.append(fuzz_row(root / "fuzz", model_cache, args.examples))
    text = faults.table(rows)
    text += (
        "\n\nFor the fuzz row: attempted = requests sent, acknowledged = answered OK, "
        "present = answered with a status other than INTERNAL/UNKNOWN."
    )
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 1 if any(row.problems for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
