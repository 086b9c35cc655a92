"""MemoryService entry point: build the store and operations once, serve until SIGTERM."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import grpc
from grpc_health.v1 import health_pb2
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from strata.admin.v1 import admin_pb2, admin_pb2_grpc
from strata.admin.v1 import errors_pb2 as admin_errors_pb2  # noqa: F401  (reflection serves ErrorReason)
from strata.memory.v1 import (
    errors_pb2,  # noqa: F401  (loaded so reflection serves the ErrorReason catalogue)
    memory_service_pb2,
    memory_service_pb2_grpc,
)
from strata_memory.admin_servicer import AdminServicer
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.reindex import Reindexer
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.limits import RESPONSE_BYTES_UNBOUNDED, admission_methods, agent_file_bytes
from strata_memory.metrics import DeliveryMetrics, OutboxCollector
from strata_memory.operations.agent_files import AgentFiles
from strata_memory.operations.agents import Agents
from strata_memory.operations.api_keys import ApiKeys, MemoryAuthenticator
from strata_memory.operations.archival import Archives
from strata_memory.operations.blocks import Blocks
from strata_memory.operations.external_tools import ExternalTools
from strata_memory.operations.files import Files
from strata_memory.operations.idempotency import RequestPruner
from strata_memory.operations.memory_operations import MemoryOperations
from strata_memory.operations.messages import Messages
from strata_memory.operations.parked_jobs import ParkedJobs
from strata_memory.operations.prompts import Clock, Prompts
from strata_memory.operations.purge import Purger
from strata_memory.operations.search import LegWeights, Search
from strata_memory.operations.store_health import StoreWatch
from strata_memory.operations.tenant_quotas import TenantQuotas
from strata_memory.operations.tools import ToolRunner
from strata_memory.servicer import MemoryServicer
from strata_memory.settings import MemorySettings
from strata_memory.store.database import Database
from strata_memory.store.notices import JobNotices
from strata_memory.store.postgres_session import SessionLimits
from strata_serving.auth import AccessPolicy, AuthInterceptor, PrincipalKind
from strata_serving.entry_point import run_service
from strata_serving.fair_admission import AdmissionInterceptor, MethodRule
from strata_serving.fair_share import Activity, FairShare, Pacing, PoolLimits
from strata_serving.server import GrpcServer
from strata_serving.tls import channel_credentials, server_tls

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class MemoryServer:
    """A running MemoryService: its gRPC server, the store it owns and the outbox worker."""

    grpc: GrpcServer
    database: Database
    outbox: OutboxWorker
    retrieval: RetrievalConnection
    notices: JobNotices
    """Wakes the outbox worker when another replica commits jobs (PostgreSQL LISTEN/NOTIFY)."""
    pruner: RequestPruner
    """Deletes the request_id records of idempotent writes after 24 hours."""
    store_watch: StoreWatch
    """Probes the store; health is NOT_SERVING while it cannot be reached."""

    @property
    def address(self) -> str:
        return self.grpc.address

    async def stop(self, grace: float = 5.0) -> None:
        await self.grpc.stop(grace)
        await self.close()

    async def close(self) -> None:
        await self.store_watch.stop()
        await self.pruner.stop()
        await self.notices.stop()
        await self.outbox.stop()
        await self.retrieval.close()
        self.database.close()


def build_operations(
    database: Database,
    retrieval: RetrievalConnection,
    outbox: OutboxWorker,
    settings: MemorySettings,
    clock: Clock,
) -> MemoryOperations:
    prompts = Prompts(database, clock)
    archives = Archives(database, prompts, outbox)
    search = Search(
        database,
        retrieval,
        archival=LegWeights(
            settings.archival_vector_weight,
            settings.archival_fts_weight,
            settings.rrf_k,
            settings.archival_candidate_depth,
        ),
        recall=LegWeights(
            settings.recall_vector_weight,
            settings.recall_fts_weight,
            settings.recall_rrf_k,
            settings.recall_candidate_depth,
        ),
        query_periods=settings.recall_query_periods,
    )
    return MemoryOperations(
        agents=Agents(database, prompts),
        blocks=Blocks(database, prompts),
        files=Files(database, prompts),
        messages=Messages(database, outbox),
        prompts=prompts,
        tools=ToolRunner(database, prompts, clock, ExternalTools(archives, search, outbox, clock)),
        archives=archives,
        search=search,
        reindexer=Reindexer(
            database,
            retrieval,
            context_turns=settings.recall_context_turns,
            context_legs=settings.recall_context_legs,
            max_request_bytes=settings.retrieval_max_message_bytes,
            streams_per_tenant=settings.reindex_streams_per_tenant,
            duty_cycle=settings.reindex_duty_cycle,
        ),
        index_queue=outbox,
        agent_files=AgentFiles(
            database, prompts, outbox, max_file_bytes=agent_file_bytes(settings.max_message_bytes)
        ),
        purger=Purger(database, prompts, retrieval, lease_seconds=settings.outbox_lease_seconds),
    )


async def start_memory_server(settings: MemorySettings, *, clock: Clock = utc_now) -> MemoryServer:
    """Open (and migrate) the store, start the outbox worker, start serving, then report SERVING.

    RetrievalService need not be up: writes are kept in the outbox until it is reachable.
    """
    database = Database(
        settings.database_url,
        max_workers=settings.db_workers,
        quota_defaults=settings.quotas,
        limits=SessionLimits(
            lock_seconds=settings.store_lock_timeout_seconds,
            statement_seconds=settings.store_statement_timeout_seconds,
            idle_in_transaction_seconds=settings.store_idle_in_transaction_seconds,
        ),
    )
    await asyncio.get_running_loop().run_in_executor(None, database.migrate)
    registry = CollectorRegistry(auto_describe=True)
    metrics_on = settings.metrics_address is not None
    retrieval = RetrievalConnection(
        settings.retrieval_address,
        timeout=settings.retrieval_timeout_seconds,
        credentials=channel_credentials(
            settings.retrieval_tls_root_cert,
            settings.retrieval_tls_client_cert,
            settings.retrieval_tls_client_key,
        ),
        api_key=_secret(settings.retrieval_api_key),
        tls_server_name=settings.retrieval_tls_server_name,
        searches_per_tenant=settings.searches_per_tenant,
        max_message_bytes=settings.retrieval_max_message_bytes,
        deliveries=DeliveryMetrics(registry) if metrics_on else None,
    )
    outbox = OutboxWorker(
        database,
        retrieval,
        policy=OutboxPolicy(
            batch_size=settings.outbox_batch_size,
            max_backoff_seconds=settings.outbox_max_backoff_seconds,
            max_attempts=settings.outbox_max_attempts,
            max_request_bytes=settings.retrieval_max_message_bytes,
            lease_seconds=settings.outbox_lease_seconds,
            idle_poll_seconds=settings.outbox_idle_poll_seconds,
            deliveries_in_flight=settings.outbox_deliveries_in_flight,
            linger_seconds=settings.outbox_linger_seconds,
        ),
        context_turns=settings.recall_context_turns,
        context_legs=settings.recall_context_legs,
    )
    servicer = MemoryServicer(build_operations(database, retrieval, outbox, settings, clock))
    parked = ParkedJobs(database, outbox.notify)
    admin = (
        AdminServicer(ApiKeys(database), parked, TenantQuotas(database))
        if settings.admin_api_key is not None
        else None
    )

    def register(server: grpc.aio.Server) -> None:
        memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server)
        if admin is not None:
            admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, server)

    server = GrpcServer(
        settings.address,
        service_names=[SERVICE_NAME, *([ADMIN_SERVICE_NAME] if admin is not None else [])],
        register=register,
        extra_interceptors=[*_auth_interceptors(settings, database), *_admission(settings)],
        options=[
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", RESPONSE_BYTES_UNBOUNDED),
        ],
        tls=server_tls(settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file),
        serving=settings,
        settings_prefix="STRATA_MEMORY_",
        registry=registry,
    )
    if metrics_on:
        registry.register(OutboxCollector(database))
    await server.start()
    outbox.start()
    notices = JobNotices(settings.database_url, outbox.notify)
    notices.start()
    pruner = RequestPruner(database)
    pruner.start()
    await server.mark_serving()
    store_watch = StoreWatch(database, _health_of(server), every_seconds=settings.store_probe_seconds)
    store_watch.start()
    return MemoryServer(server, database, outbox, retrieval, notices, pruner, store_watch)


def _health_of(server: GrpcServer) -> Callable[[bool], Awaitable[None]]:
    """What the store watch reports becomes every service's health (ignored once shutting down)."""

    async def report(reachable: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if reachable
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *server.service_names):
            await server.health.set(name, status)

    return report


def _auth_interceptors(settings: MemorySettings, database: Database) -> list[AuthInterceptor]:
    """No interceptor when auth is off and there is no admin key (exactly the unauthenticated
    default); with only an admin key, AdminService is guarded while MemoryService stays open."""
    if not settings.auth_enabled and settings.admin_api_key is None:
        return []
    tenant_kinds = frozenset({PrincipalKind.TENANT}) if settings.auth_enabled else None
    policy = AccessPolicy(
        {SERVICE_NAME: tenant_kinds, ADMIN_SERVICE_NAME: frozenset({PrincipalKind.ADMIN})},
        # Reindex with all_tenants is the operator's; the handler refuses it to tenant keys.
        methods={f"/{SERVICE_NAME}/Reindex": tenant_kinds and tenant_kinds | {PrincipalKind.ADMIN}},
    )
    authenticator = MemoryAuthenticator(database, _secret(settings.admin_api_key))
    return [AuthInterceptor(authenticator, policy)]


def _admission(settings: MemorySettings) -> list[AdmissionInterceptor]:
    """Per-tenant fair pools and request sizes (strata_memory.limits), after authentication."""
    if not settings.admission:
        return []
    configured = {
        "searches": settings.admission_searches,
        "writes": settings.admission_writes,
        "bulk": settings.admission_bulk,
    }
    what = {"searches": "searches", "writes": "writes", "bulk": "Reindex streams"}
    activity = Activity()
    pacing = Pacing(duty=settings.admission_duty) if settings.admission_duty < 1 else None
    pools = {
        name: FairShare(what[name], PoolLimits(*limits), pacing=pacing, activity=activity)
        for name, limits in configured.items()
    }
    rules = {
        f"/{SERVICE_NAME}/{method}": MethodRule(size, pool)
        for method, (size, pool) in admission_methods(settings.max_message_bytes).items()
    }
    return [AdmissionInterceptor(rules, pools, activity=activity)]


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


async def serve(settings: MemorySettings) -> None:
    running = await start_memory_server(settings)
    try:
        await running.grpc.serve_until_signal(settings.shutdown_grace_seconds)
    finally:
        await running.close()


def main() -> None:
    run_service("strata-memory", MemorySettings, serve)


if __name__ == "__main__":
    main()
