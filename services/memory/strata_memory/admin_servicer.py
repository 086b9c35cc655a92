"""AdminService handlers (API keys, parked index jobs, tenant quotas). The auth interceptor lets only
the admin key reach them."""

from __future__ import annotations

from typing import Any

import grpc

from strata.admin.v1 import admin_pb2 as pb
from strata.admin.v1 import admin_pb2_grpc as pb_grpc
from strata_memory.conversions import timestamp
from strata_memory.operations.api_keys import ApiKeys
from strata_memory.operations.parked_jobs import ParkedJobs
from strata_memory.operations.tenant_quotas import TenantQuotas
from strata_memory.store.api_keys import ApiKeyRecord
from strata_memory.store.index_jobs import ParkedJob
from strata_memory.store.quotas import QuotaState

Context = grpc.aio.ServicerContext[Any, Any]


class AdminServicer(pb_grpc.AdminServiceServicer):
    def __init__(self, keys: ApiKeys, parked: ParkedJobs, quotas: TenantQuotas) -> None:
        self._keys = keys
        self._parked = parked
        self._quotas = quotas

    async def CreateApiKey(
        self, request: pb.CreateApiKeyRequest, context: Context
    ) -> pb.CreateApiKeyResponse:
        created = await self._keys.create(request.tenant_id, request.display_name)
        return pb.CreateApiKeyResponse(api_key=api_key_to_proto(created.record), secret=created.token)

    async def ListApiKeys(self, request: pb.ListApiKeysRequest, context: Context) -> pb.ListApiKeysResponse:
        records, token = await self._keys.list(
            request.tenant_id,
            show_revoked=request.show_revoked,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        return pb.ListApiKeysResponse(api_keys=[api_key_to_proto(r) for r in records], next_page_token=token)

    async def RevokeApiKey(self, request: pb.RevokeApiKeyRequest, context: Context) -> pb.ApiKey:
        return api_key_to_proto(await self._keys.revoke(request.key_id))

    async def ListParkedIndexJobs(
        self, request: pb.ListParkedIndexJobsRequest, context: Context
    ) -> pb.ListParkedIndexJobsResponse:
        jobs, token = await self._parked.list(
            request.tenant_id, page_size=request.page_size, page_token=request.page_token
        )
        return pb.ListParkedIndexJobsResponse(
            jobs=[parked_job_to_proto(j) for j in jobs], next_page_token=token
        )

    async def RetryParkedIndexJobs(
        self, request: pb.RetryParkedIndexJobsRequest, context: Context
    ) -> pb.RetryParkedIndexJobsResponse:
        retried = await self._parked.retry(request.tenant_id, list(request.job_ids))
        return pb.RetryParkedIndexJobsResponse(retried_count=retried)

    async def GetTenantQuotas(self, request: pb.GetTenantQuotasRequest, context: Context) -> pb.TenantQuotas:
        return tenant_quotas_to_proto(request.tenant_id, await self._quotas.get(request.tenant_id))

    async def UpdateTenantQuotas(
        self, request: pb.UpdateTenantQuotasRequest, context: Context
    ) -> pb.TenantQuotas:
        states = await self._quotas.update(request.tenant_id, dict(request.limits))
        return tenant_quotas_to_proto(request.tenant_id, states)


def tenant_quotas_to_proto(tenant_id: str, states: list[QuotaState]) -> pb.TenantQuotas:
    return pb.TenantQuotas(
        tenant_id=tenant_id,
        quotas=[pb.Quota(name=s.name, limit=s.limit, overridden=s.overridden, usage=s.usage) for s in states],
    )


def api_key_to_proto(record: ApiKeyRecord) -> pb.ApiKey:
    key = pb.ApiKey(
        key_id=record.key_id,
        tenant_id=record.tenant_id,
        display_name=record.display_name,
        create_time=timestamp(record.created_us),
    )
    if record.revoked_us is not None:
        key.revoke_time.CopyFrom(timestamp(record.revoked_us))
    return key


def parked_job_to_proto(job: ParkedJob) -> pb.ParkedIndexJob:
    is_passage = job.document_id.startswith("passage-")
    return pb.ParkedIndexJob(
        job_id=job.id,
        tenant_id=job.tenant_id,
        action=job.action,
        document_id=job.document_id,
        agent_id="" if is_passage else job.scope_id,
        archive_id=job.scope_id if is_passage else "",
        reason=job.reason,
        attempts=job.attempts,
        park_time=timestamp(job.parked_us),
        create_time=timestamp(job.created_us),
    )
