"""Copy a whole store to another database, table by table: moving an embedded SQLite deployment to PostgreSQL.

    python -m strata_memory.store.copy --from sqlite:///.data/memory/memory.sqlite3 \\
        --to postgresql+psycopg://strata@db:5432/strata

Both stores are migrated to the newest revision first; the target must be empty. Rows are copied in
primary-key order, parents before children, in one transaction on the target (all or nothing), and
PostgreSQL's id sequences are moved past the copied ids; usage counts (kept by triggers) are copied last, as
the source holds them. At the end the row count of every table is
compared and printed; a difference is an error. Stop every MemoryService on the source first (a write
made during the copy would be missed), then start the replicas on the target and run a Reindex
(docs/deployment.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, func, insert, select
from sqlalchemy.engine import Connection

from strata_memory.store import schema
from strata_memory.store.database import Database

BATCH_ROWS = 1000
KEPT_BY_TRIGGERS = frozenset({schema.tenant_usage.name})
"""Tables the target's triggers fill while the others are copied: emptied, then copied as the source
holds them (so usage counts move exactly, with their check marks)."""
_SUMMARY = "Copy a whole store into an empty one (e.g. SQLite to PostgreSQL), then compare counts."


@dataclass(frozen=True, slots=True)
class TableCount:
    table: str
    source: int
    target: int

    @property
    def matches(self) -> bool:
        return self.source == self.target


class TargetNotEmpty(Exception):
    """The target store already holds rows: copying into it could mix two deployments."""


def copy_store(source_url: str, target_url: str, *, batch_rows: int = BATCH_ROWS) -> list[TableCount]:
    """Copy every table of ``source_url`` into the empty store at ``target_url``; the counts compared."""
    source, target = Database(source_url), Database(target_url)
    try:
        source.migrate()
        target.migrate()
        with target.writing() as into:
            occupied = [table.name for table in _tables() if _count(into, table)]
            if occupied:
                raise TargetNotEmpty(f"the target store is not empty (rows in {', '.join(occupied)})")
            with source.reading() as out_of:
                tables = _tables()
                last = [table for table in tables if table.name in KEPT_BY_TRIGGERS]
                for table in [table for table in tables if table.name not in KEPT_BY_TRIGGERS] + last:
                    if table.name in KEPT_BY_TRIGGERS:
                        into.execute(delete(table))
                    for rows in _batches(out_of, table, batch_rows):
                        into.execute(insert(table), rows)
            if target.backend == "postgresql":
                _advance_sequences(into)
        with source.reading() as out_of, target.reading() as into:
            return [TableCount(t.name, _count(out_of, t), _count(into, t)) for t in _tables()]
    finally:
        source.close()
        target.close()


def _tables() -> list[Table]:
    return list(schema.metadata.sorted_tables)  # parents before the tables that reference them


def _count(conn: Connection, table: Table) -> int:
    return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _batches(conn: Connection, table: Table, size: int) -> Iterator[list[dict[str, Any]]]:
    rows = conn.execute(select(table).order_by(*table.primary_key.columns)).mappings()
    while batch := rows.fetchmany(size):
        yield [dict(row) for row in batch]


def _advance_sequences(conn: Connection) -> None:
    """Set each serial column's sequence past the largest copied id (explicit ids do not move it)."""
    for table in _tables():
        for column in table.primary_key.columns:
            if column.autoincrement is True:
                largest = select(func.coalesce(func.max(column), 0)).scalar_subquery()
                sequence = func.pg_get_serial_sequence(table.name, column.name)
                conn.execute(select(func.setval(sequence, largest + 1, False)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m strata_memory.store.copy", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--from", dest="source", required=True, help="SQLAlchemy URL of the store to copy")
    parser.add_argument("--to", dest="target", required=True, help="SQLAlchemy URL of the empty target store")
    args = parser.parse_args(argv)
    try:
        counts = copy_store(args.source, args.target)
    except TargetNotEmpty as refused:
        sys.stderr.write(f"refused: {refused}\n")
        return 2
    sys.stdout.write(f"{'table':<16} {'source':>10} {'target':>10}\n")
    for count in counts:
        mark = "ok" if count.matches else "DIFFERS"
        sys.stdout.write(f"{count.table:<16} {count.source:>10} {count.target:>10}  {mark}\n")
    if not all(count.matches for count in counts):
        sys.stderr.write("the copy is incomplete: counts differ\n")
        return 1
    sys.stdout.write("copied: every count matches; start MemoryService on the target, then run a Reindex\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
