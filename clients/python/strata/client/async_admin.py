"""Typed asyncio client for AdminService (API keys, parked index jobs); ``sync_admin.py`` is
generated from this file.

Every call needs the admin key: pass it as ``api_key`` (or set ``STRATA_API_KEY``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import cached_property

from strata.admin.v1 import admin_pb2, admin_pb2_grpc
from strata.client.async_base import AsyncClientBase
from strata.client.paging import PageGuard


class AsyncAdminClient(AsyncClientBase):
    """Every AdminService RPC over a ``grpc.aio`` channel; use as a context manager or ``close()``.

    Same constructor as ``AsyncMemoryClient``; failed calls raise ``StrataClientError`` subclasses.
    """

    @cached_property
    def _stub(self) -> admin_pb2_grpc.AdminServiceAsyncStub:
        return admin_pb2_grpc.AdminServiceStub(self._channel)

    async def create_api_key(
        self, *, tenant_id: str, display_name: str = ""
    ) -> admin_pb2.CreateApiKeyResponse:
        """Mint a key for ``tenant_id``; the response's ``secret`` is shown only this once."""
        request = admin_pb2.CreateApiKeyRequest(tenant_id=tenant_id, display_name=display_name)
        return await self._call(self._stub.CreateApiKey, request)

    async def list_api_keys(
        self, *, tenant_id: str = "", show_revoked: bool = False, page_size: int = 0, page_token: str = ""
    ) -> admin_pb2.ListApiKeysResponse:
        """One page of keys, newest first (never their secrets)."""
        request = admin_pb2.ListApiKeysRequest(
            tenant_id=tenant_id, show_revoked=show_revoked, page_size=page_size, page_token=page_token
        )
        return await self._call(self._stub.ListApiKeys, request)

    async def iter_api_keys(
        self, *, tenant_id: str = "", show_revoked: bool = False
    ) -> AsyncIterator[admin_pb2.ApiKey]:
        """Every key, fetching page after page."""
        token, pages = "", PageGuard("ListApiKeys", self.max_pages)
        while True:
            page = await self.list_api_keys(tenant_id=tenant_id, show_revoked=show_revoked, page_token=token)
            for key in page.api_keys:
                yield key
            if not (token := pages.next(page.next_page_token)):
                return

    async def revoke_api_key(self, *, key_id: str) -> admin_pb2.ApiKey:
        """Revoke a key; calls with it are UNAUTHENTICATED from then on."""
        return await self._call(self._stub.RevokeApiKey, admin_pb2.RevokeApiKeyRequest(key_id=key_id))

    async def list_parked_index_jobs(
        self, *, tenant_id: str = "", page_size: int = 0, page_token: str = ""
    ) -> admin_pb2.ListParkedIndexJobsResponse:
        """One page of parked index jobs, oldest first, each with its reason and attempts."""
        request = admin_pb2.ListParkedIndexJobsRequest(
            tenant_id=tenant_id, page_size=page_size, page_token=page_token
        )
        return await self._call(self._stub.ListParkedIndexJobs, request)

    async def iter_parked_index_jobs(self, *, tenant_id: str = "") -> AsyncIterator[admin_pb2.ParkedIndexJob]:
        """Every parked index job, fetching page after page."""
        token, pages = "", PageGuard("ListParkedIndexJobs", self.max_pages)
        while True:
            page = await self.list_parked_index_jobs(tenant_id=tenant_id, page_token=token)
            for job in page.jobs:
                yield job
            if not (token := pages.next(page.next_page_token)):
                return

    async def retry_parked_index_jobs(
        self, *, tenant_id: str = "", job_ids: Sequence[int] = ()
    ) -> admin_pb2.RetryParkedIndexJobsResponse:
        """Put parked jobs (these, or every one of ``tenant_id`` / of all tenants) back into delivery."""
        request = admin_pb2.RetryParkedIndexJobsRequest(tenant_id=tenant_id, job_ids=list(job_ids))
        return await self._call(self._stub.RetryParkedIndexJobs, request)
