"""Files: documents attached to an agent as read-only blocks, open or closed, under a directory."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sqlalchemy.engine import Connection

from strata_memory.domain.budgets import validate_label, validate_limit
from strata_memory.domain.newlines import changes_with_lf, normalise_newlines
from strata_memory.operations.agents import new_id
from strata_memory.operations.prompts import Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import files as file_rows
from strata_memory.store.database import Database
from strata_memory.store.records import FileRecord, Page
from strata_serving.errors import InvalidArgument

FILE_FIELDS = ("content", "description", "is_open", "limit")


class Files:
    def __init__(self, db: Database, prompts: Prompts) -> None:
        self._db = db
        self._prompts = prompts

    async def attach(self, tenant_id: str, file: FileRecord) -> FileRecord:
        validate_label(file.directory, field="file.directory")
        validate_label(file.name, field="file.name")
        validate_limit(file.limit, field="file.limit")
        wanted = dataclasses.replace(
            file,
            id=new_id("file"),
            tenant_id=tenant_id,
            content=normalise_newlines(file.content),
            description=normalise_newlines(file.description),
        )

        def work(conn: Connection) -> FileRecord:
            agent_rows.get_agent(conn, tenant_id, file.agent_id)
            stored = file_rows.insert_file(conn, wanted)
            self._prompts.after_memory_change(conn, tenant_id, [file.agent_id])
            return stored

        return await self._db.write(work)

    async def update(self, tenant_id: str, file_id: str, changes: Mapping[str, object]) -> FileRecord:
        unknown = sorted(set(changes) - set(FILE_FIELDS))
        if unknown or not changes:
            raise InvalidArgument.field(
                "update_mask", f"must name one or more of {', '.join(FILE_FIELDS)} (got {unknown or 'none'})"
            )
        if "limit" in changes:
            validate_limit(int(str(changes["limit"])), field="file.limit")
        changes = changes_with_lf(changes, ("content", "description"))

        def work(conn: Connection) -> FileRecord:
            current = file_rows.get_file(conn, tenant_id, file_id)
            updated = file_rows.write_file(conn, dataclasses.replace(current, **changes))  # type: ignore[arg-type]
            self._prompts.after_memory_change(conn, tenant_id, [current.agent_id])
            return updated

        return await self._db.write(work)

    async def listing(self, tenant_id: str, agent_id: str, page: Page) -> list[FileRecord]:
        def work(conn: Connection) -> list[FileRecord]:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            return file_rows.agent_files(conn, agent_id, page)

        return await self._db.read(work)

    async def detach(self, tenant_id: str, file_id: str) -> None:
        def work(conn: Connection) -> None:
            current = file_rows.get_file(conn, tenant_id, file_id)
            file_rows.delete_file(conn, file_id)
            self._prompts.after_memory_change(conn, tenant_id, [current.agent_id])

        await self._db.write(work)
