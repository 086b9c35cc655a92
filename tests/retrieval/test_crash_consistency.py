"""A host crash (power loss, kernel panic) loses what was not on disk: simulated here by starting a
RetrievalService on a copy of the data folder whose vector index is the one its last flush left, and
whose other files (the fsynced journal, Tantivy's fsynced commits) are as the crash found them.
Every acknowledged write is then in both legs; without the journal the vector leg misses the
writes since the flush while the text leg holds them (the control: the simulation does discard).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import VECTOR_JOURNAL
from strata_retrieval.text_tenants import TEXT_FOLDER
from strata_retrieval.vectors.edge_durable import DurableEdgeShard
from strata_retrieval.vectors.journal import JOURNAL, WriteJournal
from tests.retrieval.service_fixtures import MEMORIES, TENANT, Service, running_service

FLUSHED, LATER = MEMORIES[:4], MEMORIES[4:]
EVERY_ID = sorted(document.id for document in MEMORIES)


async def _held(service: Service) -> tuple[list[str], list[str]]:
    found = await service.stub.FindDocuments(
        pb.FindDocumentsRequest(ids=pb.DocumentIds(tenant_id=TENANT, ids=EVERY_ID))
    )
    return list(found.vector_ids), list(found.text_ids)


async def _crash_after_unflushed_writes(data: Path, crashed: Path, embedder: OnnxSentenceEmbedder) -> None:
    """Write FLUSHED and flush; write LATER (acknowledged, not flushed); then lay out ``crashed`` as
    the disk would be after a host crash at that moment."""
    async with running_service(data, embedder, vector_flush_seconds=3600.0) as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=FLUSHED))
        assert service.app.engine is not None
        vectors = service.app.engine._vectors
        assert isinstance(vectors, DurableEdgeShard)
        vectors.checkpoint()
        shutil.copytree(data / "vectors", crashed / "vectors")  # what the flush put on disk
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=LATER))
        _copy_fsynced(data, crashed)


def _copy_fsynced(data: Path, crashed: Path) -> None:
    """What a crash leaves as it was: the journal and Tantivy (fsynced at each write), the manifest."""
    for name in (VECTOR_JOURNAL, TEXT_FOLDER):
        shutil.copytree(data / name, crashed / name)
    for path in data.iterdir():
        if path.is_file():
            shutil.copy(path, crashed / path.name)


@pytest.mark.parametrize("journal_kept", [True, False], ids=["journal", "control-without-journal"])
async def test_acknowledged_writes_are_in_both_legs_after_a_host_crash(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, journal_kept: bool
) -> None:
    crashed = tmp_path / "crashed"
    await _crash_after_unflushed_writes(tmp_path / "data", crashed, embedder)
    if not journal_kept:
        shutil.rmtree(crashed / VECTOR_JOURNAL)

    async with running_service(crashed, embedder) as service:
        vector_ids, text_ids = await _held(service)
        assert text_ids == EVERY_ID
        if journal_kept:
            assert vector_ids == EVERY_ID
        else:
            assert vector_ids == sorted(document.id for document in FLUSHED)


def test_a_record_torn_by_a_crash_was_never_acknowledged_and_is_skipped(tmp_path: Path) -> None:
    journal = WriteJournal(tmp_path)
    journal.append({"op": "delete", "keys": ["a"]})
    journal.append({"op": "delete", "keys": ["b"]})
    journal.close()
    with (tmp_path / JOURNAL).open("ab") as torn:
        torn.write(b'{"seq":3,"op":"delete","ke')
    again = WriteJournal(tmp_path)
    assert [record["keys"] for record in again.pending()] == [["a"], ["b"]]
    assert again.last == 2
    again.append({"op": "delete", "keys": ["c"]})  # after the torn tail, which is cut off
    again.close()
    reopened = WriteJournal(tmp_path)
    assert [record["keys"] for record in reopened.pending()] == [["a"], ["b"], ["c"]]
    reopened.checkpoint()
    reopened.close()
    last = WriteJournal(tmp_path)
    assert (last.pending(), last.flushed, last.last) == ([], 3, 3)
    last.close()
