"""TenantTextIndexes: one Tantivy index per tenant, its open indexes and writers bounded, a writer
never dropped while open, and each tenant's scores its own."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.index_metrics import IndexCollector
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope, document_key
from strata_retrieval.text_index import TantivyTextIndex
from strata_retrieval.text_tenants import TenantTextIndexes, tenant_folder
from strata_retrieval.vectors.edge_shard import EdgeShardIndex

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def doc(tenant: str, doc_id: str, text: str) -> Document:
    return Document(
        id=doc_id, text=text, kind=DocumentKind.PASSAGE, scope=Scope(tenant_id=tenant), created_at=T0
    )


def found(index: TenantTextIndexes, tenant: str, text: str) -> list[tuple[str, float]]:
    return [(hit.key, hit.score) for hit in index.search(text, DocumentFilter(tenant_id=tenant), 10)]


def test_each_tenant_scores_by_its_own_documents(tmp_path: Path) -> None:
    index = TenantTextIndexes(tmp_path)
    index.upsert([doc("a", "1", "green tea every morning"), doc("a", "2", "a cat on the keyboard")])
    alone = found(index, "a", "green tea")
    index.upsert([doc("b", str(i), "green tea green tea " + "filler " * i) for i in range(30)])
    assert found(index, "a", "green tea") == alone
    assert [key for key, _ in found(index, "b", "keyboard")] == []  # a's words are not b's
    shared = TantivyTextIndex(tmp_path / "shared")  # one index for both, as before
    shared.upsert([doc("a", "1", "green tea every morning"), doc("a", "2", "a cat on the keyboard")])
    shared.upsert([doc("b", str(i), "green tea green tea " + "filler " * i) for i in range(30)])
    assert shared.search("green tea", DocumentFilter(tenant_id="a"), 10)[0].score != alone[0][1]
    index.close()
    shared.close()


def test_any_tenant_name_is_a_folder_and_a_tenant_never_written_has_none(tmp_path: Path) -> None:
    index = TenantTextIndexes(tmp_path)
    odd = "../evil/😀 tenant"
    index.upsert([doc(odd, "1", "hello there")])
    assert (tmp_path / tenant_folder(odd)).is_dir()
    assert [key for key, _ in found(index, odd, "hello")] == [document_key(odd, "1")]
    assert found(index, "nobody", "hello") == []
    index.delete("nobody", [document_key("nobody", "1")])
    assert index.held("nobody", [document_key("nobody", "1")]) == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == [tenant_folder(odd)]
    index.close()


def test_open_indexes_and_writers_stay_within_their_bounds(tmp_path: Path) -> None:
    index = TenantTextIndexes(tmp_path, max_open=4, max_writers=2)
    tenants = [f"t{i}" for i in range(10)]
    for tenant in tenants:
        index.upsert([doc(tenant, "1", f"words of {tenant}"), doc(tenant, "2", "shared words")])
        indexes, writers = index.open_counts()
        assert indexes <= 4
        assert writers <= 2
    for tenant in tenants:  # every tenant still finds its own, reopened as needed
        assert [key for key, _ in found(index, tenant, tenant)] == [document_key(tenant, "1")]
        assert index.open_counts()[0] <= 4
    assert index.document_count() == 20
    index.upsert([doc("t0", "3", "more words of t0")])  # a reopened index takes writes again
    assert len(found(index, "t0", "t0")) == 2
    index.close()
    assert index.open_counts() == (0, 0)


def test_a_writer_closed_for_another_tenant_leaves_no_lock_behind(tmp_path: Path) -> None:
    """A tenant written to after its writer was closed opens a new one (Tantivy refuses a second
    writer while the first's lock is held), and another process can open an index whose writer is
    closed."""
    index = TenantTextIndexes(tmp_path, max_writers=1)
    for round_ in range(3):
        for tenant in ("a", "b"):
            index.upsert([doc(tenant, str(round_), f"round {round_}")])
    assert index.open_counts()[1] == 1
    other = TantivyTextIndex(tmp_path / tenant_folder("a"))  # a's writer is closed: its lock is free
    other.upsert([doc("a", "x", "written elsewhere")])
    other.close()
    index.close()


def test_searches_racing_writes_across_more_tenants_than_open_indexes(tmp_path: Path) -> None:
    index = TenantTextIndexes(tmp_path, max_open=3, max_writers=1)
    tenants = [f"t{i}" for i in range(6)]
    for tenant in tenants:
        index.upsert([doc(tenant, "0", f"first {tenant}")])
    errors: list[BaseException] = []

    def search_all() -> None:
        try:
            for _ in range(20):
                for tenant in tenants:
                    assert found(index, tenant, tenant), tenant
        except BaseException as error:  # noqa: BLE001  # reported by the main thread
            errors.append(error)

    searchers = [threading.Thread(target=search_all) for _ in range(2)]
    for thread in searchers:
        thread.start()
    for i in range(1, 15):
        for tenant in tenants:
            index.upsert([doc(tenant, str(i), f"more of {tenant}")])
    for thread in searchers:
        thread.join()
    assert errors == []
    index.close()


def test_descriptors_do_not_grow_with_tenants_searched(tmp_path: Path) -> None:
    index = TenantTextIndexes(tmp_path, max_open=8, max_writers=2)
    for i in range(40):
        index.upsert([doc(f"t{i}", "1", "hello")])
    before = len(list(Path("/proc/self/fd").iterdir()))
    for i in range(40):
        assert found(index, f"t{i}", "hello")
    assert len(list(Path("/proc/self/fd").iterdir())) <= before + 2  # not one per tenant (other threads'
    # files may come and go meanwhile)
    index.close()


def test_metrics_report_the_open_indexes_and_writers(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> None:
    text = TenantTextIndexes(tmp_path / "text", max_open=4, max_writers=2)
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig())
    engine.upsert([doc(f"t{i}", "1", "hello") for i in range(3)])
    gauges = {family.name: family.samples[0].value for family in IndexCollector(engine).collect()}
    assert gauges["strata_text_indexes_open"] == 3
    assert gauges["strata_text_writers_open"] == 2
    engine.close()
