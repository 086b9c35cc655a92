"""MemoryService's Purge handler: parse the target, run the purge, convert the receipt.

Mixed into :class:`strata_memory.servicer.MemoryServicer`; the rules are in
:mod:`strata_memory.domain.purge` and the work in :mod:`strata_memory.operations.purge`.
"""

from __future__ import annotations

from typing import Any

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata_memory import conversions as conv
from strata_memory.domain.purge import PurgeKind, PurgeReceipt, PurgeTarget
from strata_memory.operations.memory_operations import MemoryOperations
from strata_serving.errors import InvalidArgument
from strata_serving.tenancy import tenant_of

Context = grpc.aio.ServicerContext[Any, Any]
_BY_ID = {
    "agent_id": PurgeKind.AGENT,
    "block_id": PurgeKind.BLOCK,
    "passage_id": PurgeKind.PASSAGE,
    "message_id": PurgeKind.MESSAGE,
}


class PurgeHandlers:
    _ops: MemoryOperations

    async def Purge(self, request: api.PurgeRequest, context: Context) -> api.PurgeReceipt:
        receipt = await self._ops.purger.purge(tenant_of(context), purge_target(request))
        return receipt_to_proto(receipt)


def purge_target(request: api.PurgeRequest) -> PurgeTarget:
    """The one target the request names; INVALID_ARGUMENT when it names none or an empty id."""
    chosen = request.WhichOneof("target")
    if chosen is None:
        raise InvalidArgument.field(
            "target", "name what to purge: agent_id, block_id, passage_id, message_id or conversation"
        )
    if chosen == "conversation":
        ref = request.conversation
        agent_id = conv.required(ref.agent_id, "conversation.agent_id")
        conversation_id = conv.required(ref.conversation_id, "conversation.conversation_id")
        return PurgeTarget(PurgeKind.CONVERSATION, conversation_id, agent_id=agent_id)
    return PurgeTarget(_BY_ID[chosen], conv.required(getattr(request, chosen), chosen))


def receipt_to_proto(receipt: PurgeReceipt) -> api.PurgeReceipt:
    return api.PurgeReceipt(
        target=receipt.target,
        counts=[api.PurgeCount(store=store, deleted=deleted) for store, deleted in receipt.counts],
        document_ids=list(receipt.document_ids),
        verified=receipt.verified,
        remaining_ids=list(receipt.remaining_ids),
        verification_note=receipt.note,
        purged_at=conv.timestamp(receipt.purged_us),
    )
