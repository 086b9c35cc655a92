"""``strata admin list-parked|retry-parked``: the operator sees parked index jobs and puts them back."""

from __future__ import annotations

import json

import grpc

from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import IndexJob
from tests.security.conftest import ADMIN_KEY, create_key
from tests.security.test_cli_auth import run_cli
from tests.servers import ServicePair


async def test_parked_jobs_are_listed_and_retried_by_the_admin_only(
    stack: ServicePair, channel: grpc.aio.Channel
) -> None:
    db = Database(
        f"sqlite:///{stack.root}/memory.sqlite3"
    )  # the server's store: park a job as the outbox would
    try:
        with db.writing() as conn:
            [job] = index_jobs.enqueue(conn, "acme", index_jobs.UPSERT, ["message-gone"])
            unclaimed = IndexJob(job, "acme", index_jobs.UPSERT, "message-gone", 0)
            index_jobs.park(conn, [unclaimed], reason="INVALID_ARGUMENT: refused for the test")
    finally:
        db.close()
    target = ["--target", stack.memory_address]
    admin = [*target, "--api-key", ADMIN_KEY]

    code, out, err = await run_cli([*admin, "--json", "admin", "list-parked", "--tenant", "acme"])
    assert code == 0, err
    [listed] = json.loads(out)["jobs"]
    assert listed["job_id"] == str(job)
    assert listed["document_id"] == "message-gone"
    assert listed["reason"] == "INVALID_ARGUMENT: refused for the test"
    assert listed["attempts"] == 1
    code, out, _ = await run_cli([*admin, "admin", "list-parked", "--tenant", "globex"])
    assert code == 0
    assert "message-gone" not in out

    tenant_key = await create_key(channel, "acme")
    code, _, err = await run_cli([*target, "--api-key", tenant_key, "admin", "list-parked"])
    assert code == 1
    assert "PERMISSION_DENIED" in err

    code, out, err = await run_cli([*admin, "admin", "retry-parked", str(job)])
    assert code == 0, err
    assert "1 parked index jobs back in delivery" in out
    code, out, _ = await run_cli([*admin, "--json", "admin", "list-parked"])
    assert json.loads(out).get("jobs", []) == []
