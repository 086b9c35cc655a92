"""MemoryService entry point: build the store and operations once, serve until SIGTERM."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from strata.memory.v1 import memory_service_pb2, memory_service_pb2_grpc
from strata_memory.config import MemorySettings
from strata_memory.indexing.outbox import OutboxWorker
from strata_memory.indexing.reindex import Reindexer
from strata_memory.indexing.retrieval_client import RetrievalClient
from strata_memory.operations.agents import Agents
from strata_memory.operations.archival import Archives
from strata_memory.operations.blocks import Blocks
from strata_memory.operations.external_tools import ExternalTools
from strata_memory.operations.files import Files
from strata_memory.operations.messages import Messages
from strata_memory.operations.prompts import Clock, Prompts
from strata_memory.operations.search import LegWeights, Search
from strata_memory.operations.tools import ToolRunner
from strata_memory.servicer import MemoryOperations, MemoryServicer
from strata_memory.store.database import Database
from strata_serving.logs import configure_logging
from strata_serving.server import GrpcServer

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class MemoryServer:
    """A running MemoryService: its gRPC server, the store it owns and the outbox worker."""

    grpc: GrpcServer
    database: Database
    outbox: OutboxWorker
    retrieval: RetrievalClient

    @property
    def address(self) -> str:
        return self.grpc.address

    async def stop(self, grace: float = 5.0) -> None:
        await self.grpc.stop(grace)
        await self.close()

    async def close(self) -> None:
        await self.outbox.stop()
        await self.retrieval.close()
        self.database.close()


def build_operations(
    database: Database,
    retrieval: RetrievalClient,
    outbox: OutboxWorker,
    settings: MemorySettings,
    clock: Clock,
) -> MemoryOperations:
    prompts = Prompts(database, clock)
    archives = Archives(database, prompts, outbox)
    search = Search(
        database,
        retrieval,
        archival=LegWeights(settings.archival_vector_weight, settings.archival_fts_weight, settings.rrf_k),
        recall=LegWeights(
            settings.recall_vector_weight,
            settings.recall_fts_weight,
            settings.recall_rrf_k,
            settings.recall_candidate_depth,
        ),
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
        reindexer=Reindexer(database, retrieval, context_turns=settings.recall_context_turns),
        index_queue=outbox,
    )


async def start_memory_server(settings: MemorySettings, *, clock: Clock = utc_now) -> MemoryServer:
    """Open (and migrate) the store, start the outbox worker, start serving, then report SERVING.

    RetrievalService need not be up: writes are kept in the outbox until it is reachable.
    """
    database = Database(settings.database_url, max_workers=settings.db_workers)
    await asyncio.get_running_loop().run_in_executor(None, database.migrate)
    retrieval = RetrievalClient(settings.retrieval_address, timeout=settings.retrieval_timeout_seconds)
    outbox = OutboxWorker(
        database,
        retrieval,
        batch_size=settings.outbox_batch_size,
        max_backoff_seconds=settings.outbox_max_backoff_seconds,
        context_turns=settings.recall_context_turns,
    )
    servicer = MemoryServicer(build_operations(database, retrieval, outbox, settings, clock))
    server = GrpcServer(
        settings.address,
        service_names=[SERVICE_NAME],
        register=lambda s: memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, s),
    )
    await server.start()
    outbox.start()
    await server.mark_serving()
    return MemoryServer(server, database, outbox, retrieval)


async def serve(settings: MemorySettings) -> None:
    running = await start_memory_server(settings)
    try:
        await running.grpc.serve_until_signal(settings.shutdown_grace_seconds)
    finally:
        await running.close()


def main() -> None:
    settings = MemorySettings()
    configure_logging(settings.log_level, json_lines=settings.log_json)
    asyncio.run(serve(settings))


if __name__ == "__main__":
    main()
