"""What an operator sees of a tenant's quotas and how they are changed (AdminService).

The limits themselves are enforced by the store before every write commits (``store.quotas``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.engine import Connection

from strata_memory.store import quotas
from strata_memory.store.database import Database
from strata_memory.store.quotas import QuotaState
from strata_serving.errors import InvalidArgument
from strata_serving.tenancy import TENANT_PATTERN, TENANT_RULE


class TenantQuotas:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def get(self, tenant_id: str) -> list[QuotaState]:
        _check_tenant(tenant_id)
        defaults = self._database.quota_defaults
        return await self._database.read(lambda conn: quotas.tenant_quotas(conn, tenant_id, defaults))

    async def update(self, tenant_id: str, limits: Mapping[str, int]) -> list[QuotaState]:
        _check_tenant(tenant_id)
        defaults = self._database.quota_defaults

        def work(conn: Connection) -> list[QuotaState]:
            quotas.set_tenant_quotas(conn, tenant_id, limits)
            return quotas.tenant_quotas(conn, tenant_id, defaults)

        return await self._database.write(work)


def _check_tenant(tenant_id: str) -> None:
    if not TENANT_PATTERN.fullmatch(tenant_id):
        raise InvalidArgument.field("tenant_id", TENANT_RULE)
