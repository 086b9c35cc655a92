"""The index manifest pins the embedding model of a data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_retrieval.errors import EmbeddingModelMismatch
from strata_retrieval.manifest import IndexManifest, check_manifest, read_manifest

MINILM = IndexManifest(embedding_model="sentence-transformers/all-MiniLM-L6-v2", embedding_dimension=384)


def test_a_new_directory_records_the_model(tmp_path: Path) -> None:
    check_manifest(tmp_path / "data", MINILM)
    assert read_manifest(tmp_path / "data") == MINILM
    check_manifest(tmp_path / "data", MINILM)  # the same model opens it again


@pytest.mark.parametrize(
    "other",
    [
        IndexManifest(embedding_model="sentence-transformers/all-MiniLM-L6-v2:int8", embedding_dimension=384),
        IndexManifest(embedding_model="sentence-transformers/all-MiniLM-L6-v2", embedding_dimension=768),
    ],
)
def test_another_model_or_dimension_is_refused(tmp_path: Path, other: IndexManifest) -> None:
    check_manifest(tmp_path, MINILM)
    with pytest.raises(EmbeddingModelMismatch) as caught:
        check_manifest(tmp_path, other)
    assert caught.value.reason == "EMBEDDING_MODEL_MISMATCH"
    assert caught.value.metadata["index_model"] == MINILM.embedding_model
    assert read_manifest(tmp_path) == MINILM  # the refusal changed nothing
