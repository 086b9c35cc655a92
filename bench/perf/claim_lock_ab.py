"""How long an outbox claim holds the store's write transaction behind one tenant's backlog: the
backlogs counted inside it (as before) against counted in a read transaction first, interleaved.

    python -m bench.perf.claim_lock_ab --jobs 300000 --rounds 7
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from collections.abc import Callable

from sqlalchemy import insert
from sqlalchemy.engine import Connection

from strata_memory.indexing.fairness import fair_shares
from strata_memory.store import index_jobs, schema
from strata_memory.store.database import Database

WINDOW = 256


def seed(db: Database, jobs: int) -> None:
    rows = [
        {
            "tenant_id": "big",
            "action": "upsert",
            "document_id": f"passage-{i}",
            "attempts": 0,
            "next_attempt_us": 0,
            "last_error": "",
            "created_us": 0,
            "parked_us": None,
            "lease_owner": "",
            "lease_until_us": 0,
        }
        for i in range(jobs)
    ]
    with db.writing() as conn:
        conn.execute(insert(schema.index_jobs), rows)


def timed_claim(db: Database, backlogs: Callable[[Connection], dict[str, int]]) -> float:
    """Seconds the claim's write transaction takes; its leases released afterwards."""
    start = time.perf_counter()
    with db.writing() as conn:
        shares = fair_shares(backlogs(conn), WINDOW, resume_after=None)
        index_jobs.claim(conn, shares.per_tenant, owner="bench", lease_us=10**12)
    elapsed = time.perf_counter() - start
    with db.writing() as conn:
        released = schema.index_jobs.update().where(schema.index_jobs.c.lease_owner == "bench")
        conn.execute(released.values(lease_until_us=0, lease_owner=""))
    return elapsed


def _given(counted: dict[str, int], _conn: Connection) -> dict[str, int]:
    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    db = Database(f"sqlite:///{tempfile.mkdtemp()}/m.sqlite3")
    db.migrate()
    seed(db, args.jobs)
    inside, before = [], []
    for _ in range(args.rounds):
        inside.append(timed_claim(db, index_jobs.backlogs))
        with db.reading() as conn:
            counted = index_jobs.backlogs(conn)
        before.append(timed_claim(db, functools.partial(_given, counted)))
    db.close()
    old, new = statistics.median(inside) * 1000, statistics.median(before) * 1000
    print(f"{args.jobs} ready jobs of one tenant, a claim's write transaction:")
    print(f"  backlogs counted inside {old:.1f} ms, read before {new:.1f} ms, ratio {new / old:.3f}")
    print(f"  (p50 of {args.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
