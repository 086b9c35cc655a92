"""The index manifest pins the embedding model of a data directory, and picks the precision."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_retrieval.embedding.onnx_embedder import Precision
from strata_retrieval.errors import EmbeddingModelMismatch
from strata_retrieval.main import embedder_precision
from strata_retrieval.manifest import IndexManifest, check_manifest, read_manifest
from strata_retrieval.settings import RetrievalSettings

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


FP32_NAME = "sentence-transformers/all-MiniLM-L6-v2"
INT8_NAME = "sentence-transformers/all-MiniLM-L6-v2:int8"


def _settings(data_dir: Path, precision: Precision | None = None) -> RetrievalSettings:
    return RetrievalSettings(data_dir=data_dir, embedder_precision=precision)


def test_a_new_index_is_built_in_int8(tmp_path: Path) -> None:
    assert embedder_precision(_settings(tmp_path / "new")) is Precision.INT8


@pytest.mark.parametrize(
    ("built_with", "opened_with"), [(FP32_NAME, Precision.FP32), (INT8_NAME, Precision.INT8)]
)
def test_an_existing_index_opens_in_the_precision_it_was_built_with(
    tmp_path: Path, built_with: str, opened_with: Precision
) -> None:
    # An index from before int8 became the default keeps working without a rebuild.
    check_manifest(tmp_path, IndexManifest(embedding_model=built_with, embedding_dimension=384))
    assert embedder_precision(_settings(tmp_path)) is opened_with


def test_a_configured_precision_wins_and_a_mismatch_is_still_refused(tmp_path: Path) -> None:
    check_manifest(tmp_path, IndexManifest(embedding_model=FP32_NAME, embedding_dimension=384))
    assert embedder_precision(_settings(tmp_path, Precision.INT8)) is Precision.INT8
    with pytest.raises(EmbeddingModelMismatch):
        check_manifest(tmp_path, IndexManifest(embedding_model=INT8_NAME, embedding_dimension=384))
