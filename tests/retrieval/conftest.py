"""Shared fixtures: the real embedder, built once per test session into a temporary cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder, Precision


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def embedder(model_cache: Path) -> OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime, its graph written from the shipped weights, at the
    default precision (int8) the service uses for a new index."""
    return OnnxSentenceEmbedder.load(model_cache, threads=2, batch_size=16)


@pytest.fixture(scope="session")
def fp32_embedder(model_cache: Path) -> OnnxSentenceEmbedder:
    """The model exactly as published (fp32)."""
    return OnnxSentenceEmbedder.load(model_cache, precision=Precision.FP32, threads=2, batch_size=16)
