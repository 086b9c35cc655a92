"""Writes the ONNX graph of a BERT sentence encoder (all-MiniLM-L6-v2) from its raw weights.

The graph (opset 17 plus onnxruntime's ``com.microsoft`` kernels) takes ``input_ids`` and
``attention_mask`` (int64, ``[batch, seq]``) and returns ``sentence_embedding`` (float32,
``[batch, hidden]``): word + position + token-type-0 embeddings and LayerNorm, then per layer one
``Attention`` kernel (packed QKV projection, masked scaled-dot-product attention), the output
projection with its residual LayerNorm, an erf-GELU feed-forward block (``BiasGelu``) and a second
residual LayerNorm; finally the mean of the token vectors over the attention mask, L2-normalised.
This is what sentence-transformers computes for this model (BertModel -> mean pooling -> Normalize).
The fused kernels replace ~20 small nodes per layer, and dynamic int8 quantisation can turn
``Attention`` into ``QAttention``.

LayerNorm is the exception: it is written as plain ONNX operators (mean, variance, scale, shift),
which run faster than onnxruntime's CPU kernels for it (``LayerNormalization``,
``SkipLayerNormalization``). The figures for both choices are in ``bench/perf/findings.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from strata_retrieval.embedding.weights import BertShape

OPSET = 17
MS_DOMAIN = "com.microsoft"  # onnxruntime's fused transformer kernels
Tensors = dict[str, npt.NDArray[np.generic]]


class _GraphWriter:
    """Accumulates nodes and initializers; each ``op`` call returns its output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: type[np.generic] = np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], *, domain: str = "", **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], domain=domain, **attributes))
        return output

    def layer_norm(self, x: str, weights: Tensors, prefix: str, eps: float) -> str:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis, in plain operators."""
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        shift = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        centred = self.op("Sub", [x, self.op("ReduceMean", [x], axes=[-1])])
        variance = self.op("ReduceMean", [self.op("Mul", [centred, centred])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [variance, self.const(f"{prefix}.eps", eps)])])
        return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std]), scale]), shift])


def _embeddings(g: _GraphWriter, weights: Tensors, shape: BertShape) -> str:
    words = g.op(
        "Gather", [g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"]
    )
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("one_i64", 1, np.int64)], axis=0)
    positions = g.op("Range", [g.const("zero_i64", 0, np.int64), seq_len, g.const("step_i64", 1, np.int64)])
    table = g.const("position_embeddings", weights["embeddings.position_embeddings.weight"])
    token_type = g.const("token_type_0", weights["embeddings.token_type_embeddings.weight"][0])
    summed = g.op("Add", [g.op("Add", [words, g.op("Gather", [table, positions])]), token_type])
    return g.layer_norm(summed, weights, "embeddings.LayerNorm", shape.layer_norm_eps)


def _masks(g: _GraphWriter) -> tuple[str, str]:
    """The float mask ``[B, S, 1]`` for pooling and the int32 key mask ``[B, S]`` for attention."""
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    pooled_mask = g.op("Unsqueeze", [mask, g.const("axes_2", [2], np.int64)])
    key_mask = g.op("Cast", ["attention_mask"], to=TensorProto.INT32)
    return pooled_mask, key_mask


def _self_attention(
    g: _GraphWriter, x: str, key_mask: str, weights: Tensors, *, i: int, shape: BertShape
) -> str:
    """Multi-head self-attention as one ``Attention`` kernel (QKV packed), then output + residual LN."""
    prefix = f"encoder.layer.{i}.attention"
    parts = [weights[f"{prefix}.self.{name}.weight"].T for name in ("query", "key", "value")]
    qkv_w = g.const(f"{prefix}.qkv.wt", np.concatenate(parts, axis=1))
    qkv_b = g.const(
        f"{prefix}.qkv.bias",
        np.concatenate([weights[f"{prefix}.self.{n}.bias"] for n in ("query", "key", "value")]),
    )
    context = g.op("Attention", [x, qkv_w, qkv_b, key_mask], domain=MS_DOMAIN, num_heads=shape.heads)
    return _projected_residual_norm(
        g, context, x, weights, prefix=f"{prefix}.output", eps=shape.layer_norm_eps
    )


def _projected_residual_norm(
    g: _GraphWriter, x: str, residual: str, weights: Tensors, *, prefix: str, eps: float
) -> str:
    """``LayerNorm(residual + x @ W.T + b)``."""
    w = g.const(f"{prefix}.dense.wt", weights[f"{prefix}.dense.weight"].T)
    b = g.const(f"{prefix}.dense.bias", weights[f"{prefix}.dense.bias"])
    projected = g.op("Add", [g.op("MatMul", [x, w]), b])
    return g.layer_norm(g.op("Add", [projected, residual]), weights, f"{prefix}.LayerNorm", eps)


def _feed_forward(g: _GraphWriter, x: str, weights: Tensors, i: int, shape: BertShape) -> str:
    prefix = f"encoder.layer.{i}"
    w = g.const(f"{prefix}.intermediate.dense.wt", weights[f"{prefix}.intermediate.dense.weight"].T)
    b = g.const(f"{prefix}.intermediate.dense.bias", weights[f"{prefix}.intermediate.dense.bias"])
    gelu = g.op("BiasGelu", [g.op("MatMul", [x, w]), b], domain=MS_DOMAIN)  # exact (erf) GELU
    return _projected_residual_norm(g, gelu, x, weights, prefix=f"{prefix}.output", eps=shape.layer_norm_eps)


def _mean_pool_normalise(g: _GraphWriter, x: str, pooled_mask: str) -> str:
    axis_1 = g.const("axis_1", [1], np.int64)
    summed = g.op("ReduceSum", [g.op("Mul", [x, pooled_mask]), axis_1], keepdims=0)
    counts = g.op("Max", [g.op("ReduceSum", [pooled_mask, axis_1], keepdims=0), g.const("min_count", 1e-9)])
    mean = g.op("Div", [summed, counts])
    norm = g.op("Sqrt", [g.op("ReduceSum", [g.op("Mul", [mean, mean]), axis_1], keepdims=1)])
    normalised = g.op("Div", [mean, g.op("Max", [norm, g.const("min_norm", 1e-12)])])
    g.nodes.append(helper.make_node("Identity", [normalised], ["sentence_embedding"]))
    return "sentence_embedding"


def build_sentence_encoder(weights: Tensors, shape: BertShape) -> onnx.ModelProto:
    """The complete ONNX model; checked with ``onnx.checker`` before it is returned."""
    g = _GraphWriter()
    x = _embeddings(g, weights, shape)
    pooled_mask, key_mask = _masks(g)
    for i in range(shape.layers):
        x = _feed_forward(g, _self_attention(g, x, key_mask, weights, i=i, shape=shape), weights, i, shape)
    _mean_pool_normalise(g, x, pooled_mask)
    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        outputs=[
            helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden])
        ],
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="strata")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
