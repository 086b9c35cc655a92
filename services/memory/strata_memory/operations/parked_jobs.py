"""What an operator sees of parked index jobs and how they are put back (AdminService)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strata_memory.operations.pagination import next_token, page_from
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.index_jobs import ParkedJob
from strata_serving.errors import InvalidArgument

MAX_RETRY_IDS = 1000


class ParkedJobs:
    """Lists parked jobs and retries them; ``notify`` wakes the outbox worker after a retry."""

    def __init__(self, database: Database, notify: Callable[[], None]) -> None:
        self._database = database
        self._notify = notify

    async def list(self, tenant_id: str, *, page_size: int, page_token: str) -> tuple[list[ParkedJob], str]:
        scope = ("ListParkedIndexJobs", tenant_id)
        page = page_from(page_size, page_token, scope=scope)
        jobs = await self._database.read(
            lambda conn: index_jobs.parked(conn, tenant_id=tenant_id or None, page=page)
        )
        return jobs, next_token(page, len(jobs), scope=scope)

    async def retry(self, tenant_id: str, job_ids: Sequence[int]) -> int:
        if len(job_ids) > MAX_RETRY_IDS:
            raise InvalidArgument.field("job_ids", f"at most {MAX_RETRY_IDS} per call (got {len(job_ids)})")
        if any(job_id <= 0 for job_id in job_ids):
            raise InvalidArgument.field("job_ids", "job ids are positive")
        retried = await self._database.write(
            lambda conn: index_jobs.unpark(conn, tenant_id=tenant_id or None, job_ids=job_ids)
        )
        if retried:
            self._notify()
        return retried
