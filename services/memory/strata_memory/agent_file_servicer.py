"""MemoryService handlers for Letta Agent Files: ImportAgentFile and ExportAgentFile.

Mixed into :class:`strata_memory.servicer.MemoryServicer`; same rules: parse, delegate, convert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata_memory import conversions as conv
from strata_memory.operations.agent_files import Imported
from strata_memory.operations.archival import Written
from strata_memory.operations.memory_operations import MemoryOperations
from strata_serving.tenancy import tenant_of

Context = grpc.aio.ServicerContext[Any, Any]


class AgentFileHandlers:
    _ops: MemoryOperations

    if TYPE_CHECKING:  # ArchivalHandlers' (mixed in beside this class)

        async def _maybe_wait(self, written: Written[Any], wait: bool, context: Context) -> None: ...

    async def ImportAgentFile(
        self, request: api.ImportAgentFileRequest, context: Context
    ) -> api.ImportAgentFileResponse:
        written = await self._ops.agent_files.import_file(
            tenant_of(context), request.agent_file, request_id=request.request_id
        )
        await self._maybe_wait(written, request.wait_searchable, context)
        return _imported_to_proto(written.items)

    async def ExportAgentFile(
        self, request: api.ExportAgentFileRequest, context: Context
    ) -> api.ExportAgentFileResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        data, agent_ids = await self._ops.agent_files.export_file(
            tenant_of(context), agent_id, with_messages=request.with_messages
        )
        return api.ExportAgentFileResponse(agent_file=data, agent_ids=agent_ids)


def _imported_to_proto(imported: Imported) -> api.ImportAgentFileResponse:
    report = imported.report
    return api.ImportAgentFileResponse(
        agents=[conv.agent_to_proto(a) for a in imported.agents],
        blocks=[conv.block_to_proto(b) for b in imported.blocks],
        report=api.AgentFileReport(
            ids=imported.ids,
            messages_imported=imported.message_count,
            kept_verbatim=report.kept_verbatim,
            dropped=report.dropped,
            warnings=report.warnings,
        ),
    )
