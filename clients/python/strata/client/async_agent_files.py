"""Agent File methods of the async client: ``import_agent_file`` and ``export_agent_file``.

``sync_agent_files.py`` is generated from this file by ``scripts/generate_sync_client.py``. An Agent
File is Letta's ``.af`` format; docs/agent-files.md says what maps to Strata and what is kept verbatim.
"""

from __future__ import annotations

from functools import cached_property

from strata.client.arguments import request_id_or_new
from strata.client.async_base import AsyncClientBase
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc


class AsyncAgentFileMethods(AsyncClientBase):
    """MemoryService stub; ``import_agent_file``, ``export_agent_file``."""

    @cached_property
    def _stub(self) -> memory_service_pb2_grpc.MemoryServiceAsyncStub:
        return memory_service_pb2_grpc.MemoryServiceStub(self._channel)

    async def import_agent_file(
        self, *, agent_file: bytes, wait_searchable: bool = False, request_id: str = ""
    ) -> api.ImportAgentFileResponse:
        """Create the agents, blocks and messages of an ``.af`` file's bytes, all or nothing.

        A file that cannot be imported whole raises INVALID_ARGUMENT naming the path inside it. The
        call carries ``request_id`` (a new UUID when not given), so a retry creates one set of agents.
        """
        request = api.ImportAgentFileRequest(
            agent_file=agent_file, wait_searchable=wait_searchable, request_id=request_id_or_new(request_id)
        )
        return await self._call(self._stub.ImportAgentFile, request)

    async def export_agent_file(
        self, *, agent_id: str, with_messages: bool = False
    ) -> api.ExportAgentFileResponse:
        """The agent (with the agents imported together with it) as ``.af`` bytes."""
        request = api.ExportAgentFileRequest(agent_id=agent_id, with_messages=with_messages)
        return await self._call(self._stub.ExportAgentFile, request)
