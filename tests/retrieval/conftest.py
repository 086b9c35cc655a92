"""Shared fixtures: the real embedder, built once per test session into a temporary cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def embedder(model_cache: Path) -> OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime, its graph written from the shipped weights."""
    return OnnxSentenceEmbedder.load(model_cache, threads=2, batch_size=16)
