"""tenant_quotas and tenant_usage: per-tenant limits and the counts they are checked against.

tenant_quotas holds a tenant's own limits (AdminService.UpdateTenantQuotas); a quota without a row
there has the server's default (``strata_memory.limits.QUOTA_DEFAULTS``).

tenant_usage holds what each tenant holds, kept by triggers in the transaction that adds or deletes
the rows (every path, foreign-key cascades included): agents, blocks, archives, passages and messages
per tenant (scope ''), with the bytes of passage and message text; blocks attached to and conversations
of each agent (scope = the agent's id). Each row carries the tenant's own limits for it (-1: the
default), copied from tenant_quotas when the row is made and kept by UpdateTenantQuotas. An insert
marks its row unchecked; the store checks unchecked rows against the limits before the transaction
commits, in one statement (``store.quotas``). On
PostgreSQL the insert's update of the row takes its lock until commit, so concurrent writes of one
tenant are counted one after the other and cannot pass a limit together.

Filled from the rows already stored (a scan of messages and passages).

Also (issue 26 item 4, the cost of CreateBlock): prompt_snapshots.due_us, the time of a memory change
whose recompile was deferred to the next read of the prompt (0: none), and an index on an agent's
blocks by position, so attaching at the end finds the last place without reading the others.

Revision ID: 0013
Revises: 0012
"""

# ruff: noqa: S608  # the SQL is built from this module's constant table and column names only

from __future__ import annotations

from typing import NamedTuple

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

COLUMNS = "tenant_id, resource, scope, count, bytes, own_count, own_bytes, checked"
SQLITE_BYTES = "length(CAST({} AS BLOB))"
POSTGRES_BYTES = "octet_length({})"

# table, resource, scope column (None: the tenant's row), text column, count quota, bytes quota
COUNTED = [
    ("agents", "agents", None, None, "agents", None),
    ("blocks", "blocks", None, None, "blocks", None),
    ("archives", "archives", None, None, "archives", None),
    ("passages", "passages", None, "text", "passages", "passage_bytes"),
    ("messages", "messages", None, "content", "messages", "message_bytes"),
    ("agent_blocks", "agent_blocks", "agent_id", None, "blocks_per_agent", None),
    ("conversations", "conversations", "agent_id", None, "conversations_per_agent", None),
]


def upgrade() -> None:
    op.create_table(
        "tenant_quotas",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("quota", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "tenant_usage",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("resource", sa.String(32), primary_key=True),
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("own_count", sa.BigInteger, nullable=False),
        sa.Column("own_bytes", sa.BigInteger, nullable=False),
        sa.Column("checked", sa.SmallInteger, nullable=False),
    )
    op.create_index(
        "ix_tenant_usage_unchecked",
        "tenant_usage",
        ["checked"],
        sqlite_where=sa.text("checked = 0"),
        postgresql_where=sa.text("checked = 0"),
    )
    op.create_index("ix_tenant_usage_scope", "tenant_usage", ["scope"])
    with op.batch_alter_table("prompt_snapshots") as snapshots:
        snapshots.add_column(sa.Column("due_us", sa.BigInteger, nullable=False, server_default="0"))
    op.create_index("ix_agent_blocks_position", "agent_blocks", ["agent_id", "position"])
    postgres = op.get_bind().dialect.name == "postgresql"
    measure = POSTGRES_BYTES if postgres else SQLITE_BYTES
    for table, resource, scope, text, count_quota, bytes_quota in COUNTED:
        size = measure.format(text) if text else "0"
        if scope is None:
            source, tenant, scoped = table, "tenant_id", "''"
        else:  # an agent's rows: its tenant from the agent
            source, tenant, scoped = (
                f"{table} JOIN agents ON agents.id = {table}.{scope}",
                "agents.tenant_id",
                scope,
            )
        op.execute(
            f"INSERT INTO tenant_usage ({COLUMNS}) "
            f"SELECT {tenant}, '{resource}', {scoped}, count(*), coalesce(sum({size}), 0), -1, -1, 1 "
            f"FROM {source} GROUP BY {tenant}{'' if scope is None else f', {scope}'}"
        )
        rule = _Rule(table, resource, scope, size, count_quota, bytes_quota)
        if postgres:
            _postgres_triggers(rule)
        else:
            _sqlite_triggers(rule)
    if postgres:
        _postgres_trigger(
            "agents_scopes",
            "agents",
            "DELETE",
            "DELETE FROM tenant_usage WHERE scope IN (SELECT id FROM old_rows)",
        )
    else:
        op.execute(
            "CREATE TRIGGER usage_agents_scopes AFTER DELETE ON agents BEGIN "
            "DELETE FROM tenant_usage WHERE scope = OLD.id; END"
        )


class _Rule(NamedTuple):  # not a dataclass: alembic loads this module outside sys.modules
    table: str
    resource: str
    scope: str | None
    size: str
    count_quota: str
    bytes_quota: str | None

    def own(self, tenant: str, quota: str | None) -> str:
        if quota is None:
            return "-1"
        own = f"SELECT value FROM tenant_quotas WHERE tenant_id = {tenant} AND quota = '{quota}'"
        return f"coalesce(({own}), -1)"


def _sqlite_triggers(rule: _Rule) -> None:
    if rule.scope is None:
        tenant, scope = "NEW.tenant_id", "''"
        match = f"tenant_id = OLD.tenant_id AND resource = '{rule.resource}' AND scope = ''"
    else:
        tenant, scope = f"(SELECT tenant_id FROM agents WHERE id = NEW.{rule.scope})", f"NEW.{rule.scope}"
        match = f"resource = '{rule.resource}' AND scope = OLD.{rule.scope}"
    added = rule.size.replace("(text", "(NEW.text").replace("(content", "(NEW.content")
    removed = rule.size.replace("(text", "(OLD.text").replace("(content", "(OLD.content")
    op.execute(
        f"CREATE TRIGGER usage_{rule.table}_insert AFTER INSERT ON {rule.table} BEGIN "
        f"INSERT INTO tenant_usage ({COLUMNS}) "
        f"VALUES ({tenant}, '{rule.resource}', {scope}, 1, {added}, "
        f"{rule.own(tenant, rule.count_quota)}, {rule.own(tenant, rule.bytes_quota)}, 0) "
        "ON CONFLICT (tenant_id, resource, scope) DO UPDATE SET "
        f"count = count + 1, bytes = bytes + {added}, checked = 0; END"
    )
    op.execute(
        f"CREATE TRIGGER usage_{rule.table}_delete AFTER DELETE ON {rule.table} BEGIN "
        f"UPDATE tenant_usage SET count = count - 1, bytes = bytes - {removed} WHERE {match}; END"
    )


def _postgres_triggers(rule: _Rule) -> None:
    if rule.scope is None:
        rows, tenant, scope, group = "new_rows", "new_rows.tenant_id", "''", "new_rows.tenant_id"
        match = "u.tenant_id = d.t AND u.scope = ''"
        removed = "old_rows.tenant_id AS t"
    else:
        rows = f"new_rows JOIN agents ON agents.id = new_rows.{rule.scope}"
        tenant, scope = "agents.tenant_id", f"new_rows.{rule.scope}"
        group = f"agents.tenant_id, new_rows.{rule.scope}"
        match = "u.scope = d.s"
        removed = f"old_rows.{rule.scope} AS s"
    insert = (
        f"INSERT INTO tenant_usage ({COLUMNS}) "
        f"SELECT {tenant}, '{rule.resource}', {scope}, count(*), coalesce(sum({rule.size}), 0), "
        f"{rule.own(tenant, rule.count_quota)}, {rule.own(tenant, rule.bytes_quota)}, 0 "
        f"FROM {rows} GROUP BY {group} ORDER BY 1, 3 "
        "ON CONFLICT (tenant_id, resource, scope) DO UPDATE SET count = tenant_usage.count + EXCLUDED.count, "
        "bytes = tenant_usage.bytes + EXCLUDED.bytes, checked = 0"
    )
    key = removed.rsplit(" AS ", 1)[0]
    delete = (
        "UPDATE tenant_usage u SET count = u.count - d.n, bytes = u.bytes - d.b FROM ("
        f"SELECT {removed}, count(*) AS n, coalesce(sum({rule.size}), 0) AS b "
        f"FROM old_rows GROUP BY {key}) d "
        f"WHERE u.resource = '{rule.resource}' AND {match}"
    )
    _postgres_trigger(f"{rule.table}_insert", rule.table, "INSERT", insert)
    _postgres_trigger(f"{rule.table}_delete", rule.table, "DELETE", delete)


def _postgres_trigger(name: str, table: str, event: str, body: str) -> None:
    """A statement-level trigger (one statement per INSERT or DELETE, whatever its row count)."""
    side, rows = ("NEW", "new_rows") if event == "INSERT" else ("OLD", "old_rows")
    op.execute(
        f"CREATE FUNCTION strata_usage_{name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {body}; RETURN NULL; END $$"
    )
    op.execute(
        f"CREATE TRIGGER usage_{name} AFTER {event} ON {table} REFERENCING {side} TABLE AS {rows} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION strata_usage_{name}()"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    names = [f"{counted[0]}_{event}" for counted in COUNTED for event in ("insert", "delete")]
    for name, table in [*((n, n.rsplit("_", 1)[0]) for n in names), ("agents_scopes", "agents")]:
        op.execute(f"DROP TRIGGER IF EXISTS usage_{name}" + (f" ON {table}" if postgres else ""))
        if postgres:
            op.execute(f"DROP FUNCTION IF EXISTS strata_usage_{name}()")
    op.drop_index("ix_agent_blocks_position", "agent_blocks")
    with op.batch_alter_table("prompt_snapshots") as snapshots:
        snapshots.drop_column("due_us")
    op.drop_table("tenant_usage")
    op.drop_table("tenant_quotas")
