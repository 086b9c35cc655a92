"""Per-tenant quotas: the limits, the usage the store's triggers keep, and the check before a commit.

Triggers (migration 0013) count every row that enters or leaves the counted tables, in the same
transaction, and mark the usage rows an insert touched as unchecked; each usage row carries the
tenant's own limits for it (-1: the default). Before a write transaction commits, :func:`enforce`
marks the unchecked rows checked and reads them back in one statement (an index holds only them) and
compares each with its limit. A write past a limit raises :class:`QuotaExceeded`, which rolls the
transaction back. Checking after the insert makes one rule for every path that adds data (the API,
memory tools, Agent File imports, batches) and counts a batch whole. On PostgreSQL the trigger's update
holds the usage row's lock until commit, so two writes of one tenant are counted one after the other
and cannot pass a limit together; other tenants' rows are not touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from strata_memory.limits import QUOTA_DEFAULTS
from strata_memory.store import schema
from strata_serving.errors import InvalidArgument, ResourceExhausted

_usage = schema.tenant_usage
_quotas = schema.tenant_quotas

COUNTED: Mapping[str, tuple[str, str | None]] = {
    "agents": ("agents", None),
    "blocks": ("blocks", None),
    "archives": ("archives", None),
    "passages": ("passages", "passage_bytes"),
    "messages": ("messages", "message_bytes"),
    "agent_blocks": ("blocks_per_agent", None),
    "conversations": ("conversations_per_agent", None),
}
"""Each counted resource (``tenant_usage.resource``) and the quotas on its count and on its bytes."""
_RESOURCE_OF = {quota: resource for resource, quotas in COUNTED.items() for quota in quotas if quota}

_MARK_CHECKED = (
    update(_usage)
    .where(_usage.c.checked == 0)
    .values(checked=1)
    .returning(
        _usage.c.tenant_id,
        _usage.c.resource,
        _usage.c.scope,
        _usage.c.count,
        _usage.c.bytes,
        _usage.c.own_count,
        _usage.c.own_bytes,
    )
)


class QuotaExceeded(ResourceExhausted):
    default_reason = "QUOTA_EXCEEDED"

    def __init__(self, quota: str, limit: int, usage: int, tenant_id: str, agent_id: str = "") -> None:
        whose = f"agent '{agent_id}'" if agent_id else f"tenant '{tenant_id}'"
        metadata: dict[str, object] = {"quota": quota, "limit": limit, "usage": usage, "tenant": tenant_id}
        if agent_id:
            metadata["agent_id"] = agent_id
        super().__init__(
            f"quota {quota} of {whose} is {limit:,}; this write would make it {usage:,}: nothing was "
            "changed. Delete something first, or ask the operator for a higher quota",
            metadata=metadata,
        )


@dataclass(frozen=True, slots=True)
class QuotaState:
    name: str
    limit: int
    overridden: bool
    usage: int


def enforce(conn: Connection, defaults: Mapping[str, int] = QUOTA_DEFAULTS) -> None:
    """Raise QuotaExceeded if a row this transaction added took a tenant or agent past a limit (the
    caller rolls back); one statement, which changes nothing when nothing was added."""
    for tenant, resource, scope, count, size, own_count, own_bytes in conn.execute(_MARK_CHECKED):
        count_quota, bytes_quota = COUNTED[resource]
        for quota, used, own in ((count_quota, count, own_count), (bytes_quota, size, own_bytes)):
            if quota is None:
                continue
            limit = own if own >= 0 else defaults[quota]
            if used > limit:
                raise QuotaExceeded(quota, int(limit), int(used), tenant, scope)


def tenant_quotas(
    conn: Connection, tenant_id: str, defaults: Mapping[str, int] = QUOTA_DEFAULTS
) -> list[QuotaState]:
    """Every quota of the tenant, in name order, with its usage (0 for a per-agent quota)."""
    own_rows = conn.execute(select(_quotas.c.quota, _quotas.c.value).where(_quotas.c.tenant_id == tenant_id))
    own = {str(quota): int(value) for quota, value in own_rows}
    used: dict[str, int] = {}
    counts = conn.execute(
        select(_usage.c.resource, _usage.c.count, _usage.c.bytes).where(
            _usage.c.tenant_id == tenant_id, _usage.c.scope == ""
        )
    )
    for resource, count, size in counts:
        count_quota, bytes_quota = COUNTED[resource]
        used[count_quota] = int(count)
        if bytes_quota is not None:
            used[bytes_quota] = int(size)
    return [
        QuotaState(name, int(own.get(name, limit)), name in own, used.get(name, 0))
        for name, limit in sorted(defaults.items())
    ]


def set_tenant_quotas(conn: Connection, tenant_id: str, limits: Mapping[str, int]) -> None:
    """Set the tenant's own limits; a negative one clears it (the default applies again). The tenant's
    usage rows take the new limit at once (each keeps its own copy, read by :func:`enforce`)."""
    unknown = sorted(set(limits) - set(QUOTA_DEFAULTS))
    if unknown:
        raise InvalidArgument.field(
            "limits", f"unknown quota {unknown[0]!r}; known: {', '.join(sorted(QUOTA_DEFAULTS))}"
        )
    for name, value in sorted(limits.items()):
        conn.execute(_quotas.delete().where(_quotas.c.tenant_id == tenant_id, _quotas.c.quota == name))
        if value >= 0:
            conn.execute(_quotas.insert().values(tenant_id=tenant_id, quota=name, value=value))
        resource = _RESOURCE_OF[name]
        column = "own_bytes" if name.endswith("_bytes") else "own_count"
        conn.execute(
            update(_usage)
            .where(_usage.c.tenant_id == tenant_id, _usage.c.resource == resource)
            .values({column: max(value, -1)})
        )
