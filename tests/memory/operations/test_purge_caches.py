"""A purge also forgets the process's own copies: core memory rendered once is kept by the render
cache (keyed by block ids and versions), and a purged block's rendering must not stay there."""

from __future__ import annotations

from strata_memory.domain.model import Block
from strata_memory.domain.purge import PurgeKind, PurgeTarget
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.purge import Purger
from tests.hermetic import unreachable_address
from tests.memory.operations.conftest import TENANT, Ops, agent_record

WORD = "thistlewick"


async def test_purging_a_block_drops_its_renderings_from_the_render_cache(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(system="Sys"), [Block("human", f"{WORD} likes tea", limit=100)]
    )
    rendered, _ = await ops.prompts.render(TENANT, agent.id, None)
    assert WORD in rendered
    assert ops.prompts.renders.holding(WORD) >= 1
    block_id = (await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="human"))).block.id
    purger = Purger(ops.db, ops.prompts, RetrievalConnection(unreachable_address(), timeout=0.5))

    receipt = await purger.purge(TENANT, PurgeTarget(PurgeKind.BLOCK, block_id))

    assert dict(receipt.counts)["blocks"] == 1
    assert ops.prompts.renders.holding(WORD) == 0
