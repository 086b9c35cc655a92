"""The ONNX MiniLM embedder against an independent numpy forward pass, and on meaning."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from strata_retrieval.embedding.onnx_embedder import (
    MAX_TOKENS,
    MODEL_NAME,
    OnnxSentenceEmbedder,
    Precision,
    cached_graph,
)
from strata_retrieval.embedding.weights import read_safetensors, shipped_model_dir

Array = npt.NDArray[np.float64]
_erf = np.vectorize(math.erf)


def _layer_norm(x: Array, weight: Array, bias: Array) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    normalised: Array = (x - mean) / np.sqrt(var + 1e-12) * weight + bias
    return normalised


def _reference_embedding(token_ids: list[int]) -> Array:
    """BERT-base-style forward pass for one unpadded sentence, straight from the torch-layout weights."""
    w = {
        name: np.asarray(t, dtype=np.float64)
        for name, t in read_safetensors(shipped_model_dir() / "model.safetensors").items()
    }
    n = len(token_ids)
    x = w["embeddings.word_embeddings.weight"][token_ids] + w["embeddings.position_embeddings.weight"][:n]
    x = _layer_norm(
        x + w["embeddings.token_type_embeddings.weight"][0],
        w["embeddings.LayerNorm.weight"],
        w["embeddings.LayerNorm.bias"],
    )
    for i in range(6):
        p = f"encoder.layer.{i}."

        def dense(h: Array, name: str, p: str = p) -> Array:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (
            dense(x, f"attention.self.{n_}").reshape(n, 12, 32).transpose(1, 0, 2)
            for n_ in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, 384)
        x = _layer_norm(
            x + dense(context, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        hidden = dense(x, "intermediate.dense")
        hidden = 0.5 * hidden * (1 + _erf(hidden / math.sqrt(2)))
        x = _layer_norm(
            x + dense(hidden, "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled: Array = x.mean(0)
    return pooled / float(np.linalg.norm(pooled))


def _cosine(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.slow
def test_onnx_graph_matches_a_numpy_forward_pass(fp32_embedder: OnnxSentenceEmbedder) -> None:
    sentences = ["A man is playing a guitar on stage.", "Vitamin D deficiency increases fracture risk."]
    for sentence, vector in zip(sentences, fp32_embedder.embed_documents(sentences), strict=True):
        reference = _reference_embedding(fp32_embedder.token_ids(sentence))  # the same word pieces
        assert np.abs(vector - reference).max() < 1e-4
        assert _cosine(vector, reference) > 0.99999


def test_vectors_are_unit_length_384_d_and_named(embedder: OnnxSentenceEmbedder) -> None:
    vectors = embedder.embed_documents(["one", "two words", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.name == f"{MODEL_NAME}:int8"  # the default for a new index
    assert embedder.dimension == 384


def test_paraphrases_are_closer_than_unrelated_sentences(embedder: OnnxSentenceEmbedder) -> None:
    a, b, c = embedder.embed_documents(
        [
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Interest rates rose by half a point.",
        ]
    )
    assert _cosine(a, b) > 0.5
    assert _cosine(a, b) > _cosine(a, c) + 0.4


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_batching_padding_and_side_by_side_runs_do_not_change_a_vector(
    precision: str, embedder: OnnxSentenceEmbedder, fp32_embedder: OnnxSentenceEmbedder
) -> None:
    # fp32 pads texts into one batch; int8 embeds each alone, two at once on two threads: either
    # way every row must be its own text's vector, in input order
    model = embedder if precision == "int8" else fp32_embedder
    texts = ["short", "a considerably longer sentence that forces the short one to be padded in its batch"]
    texts += [f"note {i}: " + "the weather in Lyon " * (i % 5) + f"item {i * 7}" for i in range(10)]
    together = model.embed_documents(texts)
    alone = np.stack([model.embed_query(text) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert len({row.tobytes() for row in together}) == len(texts)


def test_texts_past_256_tokens_are_truncated_not_refused(embedder: OnnxSentenceEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    long_a, long_b = embedder.embed_documents([head + " apples", head + " completely different ending"])
    assert len(embedder.token_ids(head)) == MAX_TOKENS
    np.testing.assert_allclose(long_a, long_b, atol=1e-6)  # the tails fall beyond the cut


def test_empty_batch_gives_an_empty_matrix(embedder: OnnxSentenceEmbedder) -> None:
    assert embedder.embed_documents([]).shape == (0, 384)


def test_graph_is_built_once_and_reused(model_cache: Path, embedder: OnnxSentenceEmbedder) -> None:
    path = cached_graph(model_cache, Precision.FP32, shipped_model_dir())
    stamp = path.stat().st_mtime_ns
    assert cached_graph(model_cache, Precision.FP32, shipped_model_dir()) == path
    assert path.stat().st_mtime_ns == stamp
    assert [p.name for p in model_cache.iterdir() if p.suffix == ".tmp"] == []


@pytest.mark.slow
def test_int8_precision_is_close_to_fp32_and_named_apart(
    embedder: OnnxSentenceEmbedder, fp32_embedder: OnnxSentenceEmbedder
) -> None:
    texts = ["The cat is sleeping on the sofa.", "Quarterly revenue grew by ten percent."]
    pairs = zip(embedder.embed_documents(texts), fp32_embedder.embed_documents(texts), strict=True)
    for quantised, exact in pairs:
        assert _cosine(quantised, exact) > 0.98
    assert embedder.name == f"{MODEL_NAME}:int8"
    assert fp32_embedder.name == MODEL_NAME
