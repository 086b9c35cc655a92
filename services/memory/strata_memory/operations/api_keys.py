"""API keys: minting, listing and revoking tenant keys, and who a presented key proves to be.

A tenant key is ``sk_<key id>_<secret>``; the store keeps the key id and a SHA-256 of the secret, so a
lookup is one primary-key read and a leaked database does not leak usable keys. The admin key comes
from configuration only and is never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata_memory.operations.pagination import next_token, page_from
from strata_memory.store import api_keys
from strata_memory.store.api_keys import ApiKeyRecord
from strata_memory.store.database import Database
from strata_serving.auth import (
    Principal,
    PrincipalKind,
    StaticKey,
    mint_key,
    secret_matches,
    split_key,
)
from strata_serving.errors import InvalidArgument
from strata_serving.tenancy import TENANT_PATTERN, TENANT_RULE

MAX_DISPLAY_NAME_CHARS = 200


@dataclass(frozen=True)
class CreatedKey:
    record: ApiKeyRecord
    token: str


class ApiKeys:
    """The admin surface over the key store."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def create(self, tenant_id: str, display_name: str) -> CreatedKey:
        if not TENANT_PATTERN.fullmatch(tenant_id):
            raise InvalidArgument.field("tenant_id", TENANT_RULE)
        if len(display_name) > MAX_DISPLAY_NAME_CHARS:
            raise InvalidArgument.field(
                "display_name", f"must be at most {MAX_DISPLAY_NAME_CHARS} characters"
            )
        minted = mint_key()
        record = await self._database.write(
            lambda conn: api_keys.insert_key(
                conn,
                key_id=minted.key_id,
                tenant_id=tenant_id,
                secret_sha256=minted.secret_sha256,
                display_name=display_name,
            )
        )
        return CreatedKey(record, minted.token)

    async def list(
        self, tenant_id: str, *, show_revoked: bool, page_size: int, page_token: str
    ) -> tuple[list[ApiKeyRecord], str]:
        scope = ("ListApiKeys", tenant_id, show_revoked)
        page = page_from(page_size, page_token, scope=scope)
        records = await self._database.read(
            lambda conn: api_keys.list_keys(conn, tenant_id, show_revoked=show_revoked, page=page)
        )
        return records, next_token(page, len(records), scope=scope)

    async def revoke(self, key_id: str) -> ApiKeyRecord:
        if not key_id:
            raise InvalidArgument.field("key_id", "is required")
        return await self._database.write(lambda conn: api_keys.revoke_key(conn, key_id))


class MemoryAuthenticator:
    """The admin key from configuration, then tenant keys from the store (revoked ones prove nothing)."""

    def __init__(self, database: Database, admin_key: str | None) -> None:
        self._database = database
        admin = Principal(PrincipalKind.ADMIN, key_id="admin")
        self._admin = StaticKey(admin_key, admin) if admin_key else None

    async def authenticate(self, token: str) -> Principal | None:
        if self._admin is not None and self._admin.matches(token):
            return self._admin.principal
        parts = split_key(token)
        if parts is None:
            return None
        key_id, secret = parts
        record = await self._database.read(lambda conn: api_keys.find_key(conn, key_id))
        if record is None or record.revoked_us is not None:
            return None
        if not secret_matches(secret, record.secret_sha256):
            return None
        return Principal(PrincipalKind.TENANT, key_id=key_id, tenant=record.tenant_id)
