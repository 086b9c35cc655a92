"""Archive, agent-link and passage rows (archival memory)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping

from strata_memory.store import schema
from strata_memory.store.records import ArchiveRecord, Page, PassageRecord, now_us
from strata_serving.errors import NotFound

_AGENT_ARCHIVE_IDS = (
    select(schema.archive_agents.c.archive_id)
    .where(schema.archive_agents.c.agent_id == bindparam("agent_id"))
    .order_by(schema.archive_agents.c.created_us)
)
_tags = schema.archive_tags


def _count_tags(insert_for_dialect: Any) -> Any:
    """Add ``passages`` to an archive's count of a tag (its row is created with the first). PostgreSQL and
    SQLite spell the upsert alike but SQLAlchemy builds it per dialect."""
    statement = insert_for_dialect(_tags)
    return statement.on_conflict_do_update(
        index_elements=[_tags.c.archive_id, _tags.c.tag],
        set_={"passages": _tags.c.passages + statement.excluded.passages},
    )


_COUNT_TAGS = {"sqlite": _count_tags(sqlite.insert), "postgresql": _count_tags(postgresql.insert)}
_COUNT_PASSAGES = (
    update(schema.archives)
    .where(schema.archives.c.id == bindparam("archive_id"))
    .values(passage_count=schema.archives.c.passage_count + bindparam("added", type_=BigInteger))
)


class ArchiveNotFound(NotFound):
    default_reason = "ARCHIVE_NOT_FOUND"

    def __init__(self, archive_id: str) -> None:
        super().__init__(f"Archive '{archive_id}' not found.", metadata={"archive_id": archive_id})


class PassageNotFound(NotFound):
    default_reason = "PASSAGE_NOT_FOUND"

    def __init__(self, passage_id: str) -> None:
        super().__init__(f"Passage '{passage_id}' not found.", metadata={"passage_id": passage_id})


def insert_archive(conn: Connection, archive: ArchiveRecord) -> ArchiveRecord:
    stamp = now_us()
    conn.execute(
        insert(schema.archives).values(
            id=archive.id,
            tenant_id=archive.tenant_id,
            name=archive.name,
            description=archive.description,
            created_us=stamp,
            passage_count=0,
        )
    )
    return get_archive(conn, archive.tenant_id, archive.id)


def get_archive(conn: Connection, tenant_id: str, archive_id: str) -> ArchiveRecord:
    query = select(schema.archives).where(
        schema.archives.c.id == archive_id, schema.archives.c.tenant_id == tenant_id
    )
    row = conn.execute(query).mappings().first()
    if row is None:
        raise ArchiveNotFound(archive_id)
    return _archive(conn, row)


def list_archives(conn: Connection, tenant_id: str, agent_id: str, page: Page) -> list[ArchiveRecord]:
    query = select(schema.archives).where(schema.archives.c.tenant_id == tenant_id)
    if agent_id:
        query = query.join(
            schema.archive_agents, schema.archive_agents.c.archive_id == schema.archives.c.id
        ).where(schema.archive_agents.c.agent_id == agent_id)
    query = (
        query.order_by(schema.archives.c.created_us, schema.archives.c.id)
        .offset(page.offset)
        .limit(page.size)
    )
    return [_archive(conn, row) for row in conn.execute(query).mappings()]


def delete_archive(conn: Connection, archive_id: str) -> list[str]:
    """Delete the archive with its links and passages; returns the deleted passage ids."""
    ids = list(
        conn.execute(select(schema.passages.c.id).where(schema.passages.c.archive_id == archive_id)).scalars()
    )
    conn.execute(delete(schema.passage_tags).where(schema.passage_tags.c.archive_id == archive_id))
    conn.execute(delete(_tags).where(_tags.c.archive_id == archive_id))
    conn.execute(delete(schema.passages).where(schema.passages.c.archive_id == archive_id))
    conn.execute(delete(schema.archive_agents).where(schema.archive_agents.c.archive_id == archive_id))
    conn.execute(delete(schema.archives).where(schema.archives.c.id == archive_id))
    return ids


def attach(conn: Connection, archive_id: str, agent_id: str, *, is_default: bool = False) -> bool:
    """Link an archive to an agent; False if it was linked already."""
    if agent_id in _agent_ids(conn, archive_id):
        return False
    conn.execute(
        insert(schema.archive_agents).values(
            archive_id=archive_id, agent_id=agent_id, is_default=is_default, created_us=now_us()
        )
    )
    return True


def detach(conn: Connection, archive_id: str, agent_id: str) -> bool:
    table = schema.archive_agents
    result = conn.execute(delete(table).where(table.c.archive_id == archive_id, table.c.agent_id == agent_id))
    return result.rowcount > 0


def default_archive_id(conn: Connection, agent_id: str) -> str | None:
    table = schema.archive_agents
    query = select(table.c.archive_id).where(table.c.agent_id == agent_id, table.c.is_default.is_(True))
    return conn.execute(query).scalars().first()


def agent_archive_ids(conn: Connection, agent_id: str) -> list[str]:
    return list(conn.execute(_AGENT_ARCHIVE_IDS, {"agent_id": agent_id}).scalars())


def insert_passages(conn: Connection, passages: Sequence[PassageRecord]) -> None:
    """Store passages with their tags, counted in their archives' ``passage_count`` and ``archive_tags``
    (each archive's row is updated first, so writers of one archive take turns on it before touching its
    passages)."""
    added = Counter(p.archive_id for p in passages)
    for archive_id in sorted(added):
        conn.execute(_COUNT_PASSAGES, {"archive_id": archive_id, "added": added[archive_id]})
    conn.execute(insert(schema.passages), [_passage_columns(p) for p in passages])
    tags = [{"passage_id": p.id, "tag": t, "archive_id": p.archive_id} for p in passages for t in p.tags]
    if tags:
        conn.execute(insert(schema.passage_tags), tags)
        carried = Counter((row["archive_id"], row["tag"]) for row in tags)
        counted = [{"archive_id": a, "tag": t, "passages": n} for (a, t), n in sorted(carried.items())]
        conn.execute(_COUNT_TAGS[conn.dialect.name], counted)


def get_passages(conn: Connection, tenant_id: str, ids: Sequence[str]) -> list[PassageRecord]:
    query = select(schema.passages).where(
        schema.passages.c.tenant_id == tenant_id, schema.passages.c.id.in_(list(ids))
    )
    return [_passage(row) for row in conn.execute(query).mappings()]


def held_passage_ids(conn: Connection, tenant_id: str, ids: Sequence[str]) -> set[str]:
    """Which of these passage ids the store holds (ids only: nothing else is read)."""
    p = schema.passages.c
    return set(conn.execute(select(p.id).where(p.tenant_id == tenant_id, p.id.in_(list(ids)))).scalars())


def list_passages(
    conn: Connection, archive_ids: Sequence[str], page: Page
) -> tuple[list[PassageRecord], int]:
    where = schema.passages.c.archive_id.in_(list(archive_ids))
    total = conn.execute(select(func.count()).select_from(schema.passages).where(where)).scalar_one()
    query = (
        select(schema.passages)
        .where(where)
        .order_by(schema.passages.c.created_us, schema.passages.c.id)
        .offset(page.offset)
        .limit(page.size)
    )
    return [_passage(row) for row in conn.execute(query).mappings()], int(total)


def delete_passage(conn: Connection, tenant_id: str, passage_id: str) -> None:
    found = get_passages(conn, tenant_id, [passage_id])
    if not found:
        raise PassageNotFound(passage_id)
    archive_id, tags = found[0].archive_id, list(found[0].tags)
    conn.execute(_COUNT_PASSAGES, {"archive_id": archive_id, "added": -1})
    if tags:
        where = (_tags.c.archive_id == archive_id, _tags.c.tag.in_(tags))
        conn.execute(delete(_tags).where(*where, _tags.c.passages <= 1))
        conn.execute(update(_tags).where(*where).values(passages=_tags.c.passages - 1))
    conn.execute(delete(schema.passage_tags).where(schema.passage_tags.c.passage_id == passage_id))
    conn.execute(delete(schema.passages).where(schema.passages.c.id == passage_id))


def tenant_passage_ids(conn: Connection, tenant_id: str | None) -> list[str]:
    query = select(schema.passages.c.id).order_by(schema.passages.c.created_us)
    if tenant_id is not None:
        query = query.where(schema.passages.c.tenant_id == tenant_id)
    return list(conn.execute(query).scalars())


def _agent_ids(conn: Connection, archive_id: str) -> tuple[str, ...]:
    table = schema.archive_agents
    query = select(table.c.agent_id).where(table.c.archive_id == archive_id).order_by(table.c.created_us)
    return tuple(conn.execute(query).scalars())


def _archive(conn: Connection, row: RowMapping) -> ArchiveRecord:
    return ArchiveRecord(
        id=row["id"],
        tenant_id=row["tenant_id"],
        name=row["name"],
        description=row["description"],
        created_us=row["created_us"],
        agent_ids=_agent_ids(conn, row["id"]),
    )


def _passage_columns(passage: PassageRecord) -> dict[str, object]:
    return {
        "id": passage.id,
        "tenant_id": passage.tenant_id,
        "archive_id": passage.archive_id,
        "text": passage.text,
        "tags": list(passage.tags),
        "metadata": dict(passage.metadata),
        "created_us": passage.created_us,
    }


def _passage(row: RowMapping) -> PassageRecord:
    return PassageRecord(
        id=row["id"],
        tenant_id=row["tenant_id"],
        archive_id=row["archive_id"],
        text=row["text"],
        tags=tuple(row["tags"] or ()),
        metadata={str(k): str(v) for k, v in (row["metadata"] or {}).items()},
        created_us=row["created_us"],
    )
