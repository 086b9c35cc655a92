"""Forgetting with a receipt: the async client's ``purge``.

``sync_purge.py`` is generated from this file by ``scripts/generate_sync_client.py``. A purge cannot
be undone: it deletes its target with every stored copy of the content (block history, compiled
prompts, receipts, outbox jobs, index documents) and returns a receipt counting each store.
"""

from __future__ import annotations

from functools import cached_property

from strata.client.arguments import purge_request
from strata.client.async_base import AsyncClientBase
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc


class AsyncPurgeMethods(AsyncClientBase):
    """MemoryService stub; ``purge``."""

    @cached_property
    def _stub(self) -> memory_service_pb2_grpc.MemoryServiceAsyncStub:
        return memory_service_pb2_grpc.MemoryServiceStub(self._channel)

    async def purge(self, *, kind: str, target_id: str, agent_id: str = "") -> api.PurgeReceipt:
        """Purge one ``agent``, ``block``, ``passage``, ``message`` or ``conversation`` (whose agent
        is ``agent_id``) by id, and return the receipt.

        ``receipt.verified`` is true only when RetrievalService was read back by id and no index leg
        held any purged document; otherwise ``verification_note`` says why (the store part is done,
        and the index part finishes through the outbox). Another tenant's id is NOT_FOUND.
        """
        return await self._call(self._stub.Purge, purge_request(kind, target_id, agent_id))
