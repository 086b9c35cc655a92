"""The hostile-tenant rows of the fault matrix as tests (issue 14): nothing acknowledged is lost and
nothing another tenant does keeps a write from becoming searchable."""

from __future__ import annotations

from pathlib import Path

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security import faults, hostile_faults


async def test_a_poison_message_leaves_both_tenants_searchable(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder
) -> None:
    row = await hostile_faults.poison_message(tmp_path, security_embedder)
    assert row.problems == [], faults.table([row])
    assert row.present == row.acknowledged == row.attempted == 3


async def test_a_cancelled_reindex_leaves_every_stored_message_searchable(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder
) -> None:
    row = await hostile_faults.cancelled_reindex(tmp_path, security_embedder, messages=200)
    assert row.problems == [], faults.table([row])
    assert row.present == row.acknowledged == row.attempted == 200


async def test_a_flooding_tenant_does_not_hold_back_another_tenants_write(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder
) -> None:
    row = await hostile_faults.tenant_flood(tmp_path, security_embedder, noisy=600)
    assert row.problems == [], faults.table([row])
    assert row.present == row.acknowledged == row.attempted == 601
