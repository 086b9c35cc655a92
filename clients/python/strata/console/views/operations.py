"""Operations (a session holding the admin key only): service health of every replica the console
reaches, index health per tenant, parked index jobs with their reasons and retry, and Reindex of all
tenants with live progress.

What the public API offers is what this page shows: documents per tenant come from RetrievalService
Stats (it may need ``STRATA_CONSOLE_RETRIEVAL_API_KEY``); the tenants are those holding API keys or
parked jobs; no RPC reports the outbox depth, so the page says so instead of guessing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from strata.client import AsyncAdminClient, AsyncRetrievalClient, StrataClientError
from strata.console.pages import (
    Refusal,
    acting,
    checked_form,
    console_of,
    http_status,
    redirect,
    render,
    text,
)
from strata.console.sessions import Session
from strata.retrieval.v1 import retrieval_pb2 as rpb

HEALTH_TIMEOUT = 2.0


@dataclass(frozen=True)
class Health:
    service: str
    address: str
    status: str


@dataclass(frozen=True)
class TenantIndex:
    tenant: str
    documents: str
    parked: int


def replicas(target: str) -> list[str]:
    """The addresses a target names: ``ipv4:a:1,b:2`` -> [a:1, b:2]; a plain ``host:port`` -> itself."""
    return [address.strip() for address in target.removeprefix("ipv4:").split(",") if address.strip()]


async def health_of(service: str, address: str) -> Health:
    """The grpc.health.v1 status the process at ``address`` reports (or why it could not be asked)."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=HEALTH_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            return Health(service, address, f"{error.code().name}: {error.details()}")
    return Health(service, address, health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def admin_session(request: Request) -> tuple[Session, AsyncAdminClient]:
    session = acting(request)
    if session.admin is None:
        raise HTTPException(403, "Operations need the admin key: sign out and sign in with it.")
    return session, session.admin


async def documents(request: Request, tenant: str) -> str:
    settings = console_of(request).settings
    async with AsyncRetrievalClient(
        settings.retrieval_target, api_key=settings.retrieval_api_key, timeout=HEALTH_TIMEOUT
    ) as retrieval:
        try:
            stats = await retrieval.stats(filter=rpb.DocumentFilter(tenant_id=tenant))
        except StrataClientError as error:
            return f"{error.code.name}: {error.message}"
    return str(stats.document_count)


async def operations_page(request: Request, refusal: Refusal | None = None, status: int = 200) -> Response:
    session, admin = admin_session(request)
    settings = console_of(request).settings
    targets = [("memory", a) for a in replicas(settings.memory_target)]
    targets += [("retrieval", a) for a in replicas(settings.retrieval_target)]
    try:
        health = await asyncio.gather(*(health_of(service, address) for service, address in targets))
        jobs = [job async for job in admin.iter_parked_index_jobs()]
        tenants = {key.tenant_id async for key in admin.iter_api_keys()} | {job.tenant_id for job in jobs}
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    names = sorted(tenants)
    counts = await asyncio.gather(*(documents(request, tenant) for tenant in names))
    index = [
        TenantIndex(tenant, count, sum(1 for job in jobs if job.tenant_id == tenant))
        for tenant, count in zip(names, counts, strict=True)
    ]
    return render(
        request, session, "operations.html", status, health=health, jobs=jobs, index=index, refusal=refusal
    )


async def retry(request: Request) -> Response:
    session, form = await checked_form(request)
    if session.admin is None:
        raise HTTPException(403, "Operations need the admin key.")
    try:
        await session.admin.retry_parked_index_jobs(tenant_id=text(form, "tenant_id"))
    except StrataClientError as error:
        return await operations_page(request, Refusal.of(error, "tenant_id"), http_status(error))
    return redirect(request, "/operations")


async def reindex(request: Request) -> Response:
    """Reindex every tenant; the response streams one ``done total`` line per progress message."""
    session, _ = await checked_form(request)
    if session.admin is None or session.memory is None:
        raise HTTPException(403, "Operations need the admin key.")
    memory = session.memory

    async def progress() -> AsyncIterator[str]:
        try:
            async for step in memory.reindex(all_tenants=True):
                yield f"{step.documents_done} {step.documents_total}{' done' if step.done else ''}\n"
        except StrataClientError as error:
            yield f"error {error.code.name}: {error.message}\n"

    return StreamingResponse(progress(), media_type="text/plain; charset=utf-8")
