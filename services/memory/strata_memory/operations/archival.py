"""Archival memory: archives (shareable between agents) and their passages.

Every passage write commits together with its indexing job (the outbox), so an acknowledged passage
is never lost, even while RetrievalService is down; callers may wait until it is searchable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from sqlalchemy.engine import Connection

from strata_memory.limits import MAX_PASSAGE_CHARS, MAX_PASSAGE_TAGS, MAX_PASSAGES_PER_CALL, MAX_TAG_CHARS
from strata_memory.operations.agents import new_id
from strata_memory.operations.idempotency import Once, in_order
from strata_memory.operations.prompts import Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, Page, PassageRecord, now_us
from strata_serving.errors import InvalidArgument

T = TypeVar("T")


class IndexQueue(Protocol):
    """Where writers announce new outbox jobs and wait for their delivery."""

    def notify(self) -> None: ...

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class Written(Generic[T]):
    """What a write stored, and the outbox jobs that will make it searchable."""

    items: T
    job_ids: list[int]


def checked_passage(passage: PassageRecord, index: int) -> PassageRecord:
    text = passage.text.replace("\r\n", "\n")
    if not text.strip():
        raise InvalidArgument.field(f"passages[{index}].text", "must not be empty")
    if len(text) > MAX_PASSAGE_CHARS:
        raise InvalidArgument.field(
            f"passages[{index}].text", f"is {len(text)} characters; at most {MAX_PASSAGE_CHARS}"
        )
    tags = tuple(dict.fromkeys(tag.strip() for tag in passage.tags))
    if len(tags) > MAX_PASSAGE_TAGS or any(not tag or len(tag) > MAX_TAG_CHARS for tag in tags):
        raise InvalidArgument.field(
            f"passages[{index}].tags", f"at most {MAX_PASSAGE_TAGS} tags of 1-{MAX_TAG_CHARS} characters each"
        )
    return dataclasses.replace(passage, text=text, tags=tags)


class Archives:
    def __init__(self, db: Database, prompts: Prompts, queue: IndexQueue) -> None:
        self._db = db
        self._prompts = prompts
        self._queue = queue

    async def create(self, archive: ArchiveRecord, agent_id: str) -> ArchiveRecord:
        if not archive.name.strip():
            raise InvalidArgument.field("archive.name", "is required")
        wanted = dataclasses.replace(archive, id=new_id("archive"))

        def work(conn: Connection) -> ArchiveRecord:
            if agent_id:
                agent_rows.get_agent(conn, archive.tenant_id, agent_id)
            archive_rows.insert_archive(conn, wanted)
            if agent_id:
                archive_rows.attach(conn, wanted.id, agent_id)
            return archive_rows.get_archive(conn, archive.tenant_id, wanted.id)

        return await self._db.write(work)

    async def get(self, tenant_id: str, archive_id: str) -> ArchiveRecord:
        return await self._db.read(lambda conn: archive_rows.get_archive(conn, tenant_id, archive_id))

    async def listing(self, tenant_id: str, agent_id: str, page: Page) -> list[ArchiveRecord]:
        def work(conn: Connection) -> list[ArchiveRecord]:
            if agent_id:
                agent_rows.get_agent(conn, tenant_id, agent_id)
            return archive_rows.list_archives(conn, tenant_id, agent_id, page)

        return await self._db.read(work)

    async def delete(self, tenant_id: str, archive_id: str) -> None:
        def work(conn: Connection) -> None:
            archive = archive_rows.get_archive(conn, tenant_id, archive_id)
            archive_rows.delete_archive(conn, archive_id)
            index_jobs.enqueue(conn, tenant_id, index_jobs.DELETE_ARCHIVE, [archive_id])
            self._prompts.after_memory_change(conn, tenant_id, archive.agent_ids)

        await self._db.write(work)
        self._queue.notify()

    async def attach(self, tenant_id: str, agent_id: str, archive_id: str, *, attach: bool) -> ArchiveRecord:
        """Attach (idempotent) or detach an archive; the agent's prompt follows its policy."""

        def work(conn: Connection) -> ArchiveRecord:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            archive_rows.get_archive(conn, tenant_id, archive_id)
            changed = (archive_rows.attach if attach else archive_rows.detach)(conn, archive_id, agent_id)
            if changed:
                self._prompts.after_memory_change(conn, tenant_id, [agent_id])
            return archive_rows.get_archive(conn, tenant_id, archive_id)

        return await self._db.write(work)

    async def insert(
        self,
        tenant_id: str,
        *,
        agent_id: str,
        archive_id: str,
        passages: Sequence[PassageRecord],
        request_id: str = "",
    ) -> Written[list[PassageRecord]]:
        """Store passages in ``archive_id``, or in the agent's default archive (created on first use).

        With a ``request_id``, a repeat of the call returns what the first stored (``idempotency``)."""
        if not passages:
            raise InvalidArgument.field("passages", "must contain at least one passage")
        if len(passages) > MAX_PASSAGES_PER_CALL:
            raise InvalidArgument.field("passages", f"at most {MAX_PASSAGES_PER_CALL} per call")
        if not agent_id and not archive_id:
            raise InvalidArgument.field("agent_id", "name an agent (its default archive) or an archive_id")
        checked = [checked_passage(p, i) for i, p in enumerate(passages)]
        once = Once.of(tenant_id, "CreatePassages", request_id, agent_id, archive_id, list(passages))
        ids = [new_id("passage") for _ in checked]

        def work(conn: Connection) -> Written[list[PassageRecord]]:
            if once is not None and (earlier := once.claim(conn, ids)) is not None:
                found = in_order(earlier, archive_rows.get_passages(conn, tenant_id, earlier))
                return Written(found, index_jobs.pending_for(conn, tenant_id, earlier))
            target = archive_id or self._default_archive(conn, tenant_id, agent_id)
            archive = archive_rows.get_archive(conn, tenant_id, target)
            stamp = now_us()
            stored = [
                dataclasses.replace(
                    p,
                    id=ids[i],
                    tenant_id=tenant_id,
                    archive_id=target,
                    created_us=p.created_us or stamp + i,  # one microsecond apart: listing keeps call order
                )
                for i, p in enumerate(checked)
            ]
            archive_rows.insert_passages(conn, stored)
            jobs = index_jobs.enqueue(conn, tenant_id, index_jobs.UPSERT, [p.id for p in stored])
            self._prompts.after_memory_change(conn, tenant_id, archive.agent_ids)
            return Written(stored, jobs)

        written = await self._db.write(work)
        self._queue.notify()
        return written

    def _default_archive(self, conn: Connection, tenant_id: str, agent_id: str) -> str:
        agent = agent_rows.get_agent(conn, tenant_id, agent_id)
        existing = archive_rows.default_archive_id(conn, agent_id)
        if existing is not None:
            return existing
        archive = ArchiveRecord(
            id=new_id("archive"),
            tenant_id=tenant_id,
            name=f"{agent.name or agent.id}'s archive",
            description="Default archive, created on the agent's first archival insert",
            created_us=0,
        )
        archive_rows.insert_archive(conn, archive)
        archive_rows.attach(conn, archive.id, agent_id, is_default=True)
        return archive.id

    async def passages(
        self, tenant_id: str, *, archive_id: str, agent_id: str, page: Page
    ) -> tuple[list[PassageRecord], int]:
        def work(conn: Connection) -> tuple[list[PassageRecord], int]:
            if archive_id:
                archive_rows.get_archive(conn, tenant_id, archive_id)
                return archive_rows.list_passages(conn, [archive_id], page)
            agent_rows.get_agent(conn, tenant_id, agent_id)
            return archive_rows.list_passages(conn, archive_rows.agent_archive_ids(conn, agent_id), page)

        return await self._db.read(work)

    async def delete_passage(self, tenant_id: str, passage_id: str) -> None:
        def work(conn: Connection) -> None:
            found = archive_rows.get_passages(conn, tenant_id, [passage_id])
            archive_rows.delete_passage(conn, tenant_id, passage_id)
            index_jobs.enqueue(conn, tenant_id, index_jobs.DELETE, [passage_id])
            holders = archive_rows.get_archive(conn, tenant_id, found[0].archive_id).agent_ids
            self._prompts.after_memory_change(conn, tenant_id, holders)

        await self._db.write(work)
        self._queue.notify()
