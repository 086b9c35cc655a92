"""Shared fixtures: the real embedder, built once per test session into a temporary cache.

``STRATA_TEST_MODEL_CACHE`` names a folder to keep the built graphs in across sessions instead
(``make mutation`` sets it: each mutant is a pytest session of its own, and building the int8
graph takes ~20 s). The graphs are a pure function of the shipped weights, named by their size and
the graph version, so a kept one is the graph a fresh build would make.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder, Precision


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("STRATA_TEST_MODEL_CACHE")
    return Path(kept) if kept else tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def embedder(model_cache: Path) -> OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime, its graph written from the shipped weights, at the
    default precision (int8) the service uses for a new index."""
    return OnnxSentenceEmbedder.load(model_cache, threads=2, batch_size=16)


@pytest.fixture(scope="session")
def fp32_embedder(model_cache: Path) -> OnnxSentenceEmbedder:
    """The model exactly as published (fp32)."""
    return OnnxSentenceEmbedder.load(model_cache, precision=Precision.FP32, threads=2, batch_size=16)
