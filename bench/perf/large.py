"""The 1M-document corpus of ``make bench-large``: texts and vectors generated from real ones.

Embedding a million texts would take about 20 minutes of both cores, so only a base of 20,000
chat-length documents is embedded, by the real model. Document ``i`` is base text ``i mod 20,000``
(followed by ``(variant k)`` for ``k = i // 20,000 > 0``), and its vector is that base text's real
embedding plus Gaussian noise (sigma 0.04 per component, cosine to the original about 0.8), then
renormalised: clusters of near neighbours around real sentence embeddings, which is harder for HNSW
than exact duplicates. Queries are embedded by the real model at search time.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bench.perf.corpus import chat_documents
from bench.perf.serve import MODEL_CACHE, bench_precision, save_precomputed
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

BASE = 20_000
NOISE_SIGMA = 0.04
SEED = 20261202


def generate(count: int, directory: Path, *, base_size: int = BASE) -> tuple[list[str], Path]:
    """``count`` texts and a precomputed-vector table for them under ``directory``."""
    base = chat_documents(min(base_size, count))
    model = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=bench_precision(), threads=2)
    began = time.monotonic()
    embedded = np.concatenate([model.embed_documents(base[i : i + 256]) for i in range(0, len(base), 256)])
    print(f"  embedded {len(base)} base documents in {time.monotonic() - began:.0f} s", flush=True)
    texts = [
        base[i % len(base)] + (f" (variant {i // len(base)})" if i >= len(base) else "") for i in range(count)
    ]
    rng = np.random.default_rng(SEED)
    vectors = np.empty((count, embedded.shape[1]), dtype=np.float32)
    for first in range(0, count, 100_000):
        rows = np.arange(first, min(first + 100_000, count))
        block = embedded[rows % len(base)] + rng.normal(0.0, NOISE_SIGMA, (len(rows), embedded.shape[1]))
        block[rows < len(base)] = embedded[rows[rows < len(base)]]
        vectors[rows] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return texts, save_precomputed(directory, texts, vectors)
