"""Writes the ONNX graph of a BERT sentence encoder (all-MiniLM-L6-v2) from its raw weights.

The graph (opset 17) takes ``input_ids`` and ``attention_mask`` (int64, ``[batch, seq]``) and
returns ``sentence_embedding`` (float32, ``[batch, hidden]``): word + position + token-type-0
embeddings and LayerNorm, then per layer a fused QKV projection, masked scaled-dot-product attention,
output projection, residual LayerNorm, an Erf-GELU feed-forward block and a second residual LayerNorm;
finally the mean of the token vectors over the attention mask, L2-normalised. This is what
sentence-transformers computes for this model (BertModel -> mean pooling -> Normalize).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from strata_retrieval.embedding.weights import BertShape

OPSET = 17
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

    def op(self, op_type: str, inputs: list[str], **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], **attributes))
        return output

    def linear(self, x: str, weights: Tensors, prefix: str) -> str:
        """``x @ W.T + b`` for a torch ``Linear`` named ``prefix`` (weight stored ``[out, in]``)."""
        w = self.const(f"{prefix}.wt", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: Tensors, prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)


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


def _attention_bias(g: _GraphWriter) -> tuple[str, str]:
    """The float mask ``[B, S, 1]`` for pooling and the additive bias ``[B, 1, 1, S]`` for attention."""
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    blocked = g.op("Sub", [g.const("one_f", 1.0), mask])
    bias = g.op("Mul", [blocked, g.const("mask_min", -1e9)])
    bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", [1, 2], np.int64)])
    pooled_mask = g.op("Unsqueeze", [mask, g.const("axes_2", [2], np.int64)])
    return pooled_mask, bias


def _self_attention(g: _GraphWriter, x: str, bias: str, weights: Tensors, *, i: int, shape: BertShape) -> str:
    prefix = f"encoder.layer.{i}.attention"
    head_dim = shape.hidden // shape.heads
    parts = [weights[f"{prefix}.self.{name}.weight"].T for name in ("query", "key", "value")]
    qkv_w = g.const(f"{prefix}.qkv.wt", np.concatenate(parts, axis=1))
    qkv_b = g.const(
        f"{prefix}.qkv.bias",
        np.concatenate([weights[f"{prefix}.self.{n}.bias"] for n in ("query", "key", "value")]),
    )
    qkv = g.op("Add", [g.op("MatMul", [x, qkv_w]), qkv_b])
    split = g.const(f"{prefix}.split", [shape.hidden] * 3, np.int64)
    q, k, v = (f"{prefix}.{n}" for n in "qkv")
    g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], axis=-1))
    heads_shape = g.const(f"{prefix}.heads_shape", [0, 0, shape.heads, head_dim], np.int64)
    q_h = g.op("Transpose", [g.op("Reshape", [q, heads_shape])], perm=[0, 2, 1, 3])
    k_t = g.op("Transpose", [g.op("Reshape", [k, heads_shape])], perm=[0, 2, 3, 1])
    v_h = g.op("Transpose", [g.op("Reshape", [v, heads_shape])], perm=[0, 2, 1, 3])
    scale = g.const(f"{prefix}.scale", 1.0 / math.sqrt(head_dim))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q_h, k_t]), scale]), bias])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v_h])
    merged_shape = g.const(f"{prefix}.merged_shape", [0, 0, shape.hidden], np.int64)
    merged = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merged_shape])
    projected = g.linear(merged, weights, f"{prefix}.output.dense")
    return g.layer_norm(
        g.op("Add", [x, projected]), weights, f"{prefix}.output.LayerNorm", shape.layer_norm_eps
    )


def _feed_forward(g: _GraphWriter, x: str, weights: Tensors, i: int, shape: BertShape) -> str:
    prefix = f"encoder.layer.{i}"
    hidden = g.linear(x, weights, f"{prefix}.intermediate.dense")
    erf = g.op("Erf", [g.op("Div", [hidden, g.const(f"{prefix}.sqrt2", math.sqrt(2.0))])])
    gelu = g.op(
        "Mul",
        [
            g.op("Mul", [hidden, g.op("Add", [erf, g.const(f"{prefix}.one", 1.0)])]),
            g.const(f"{prefix}.half", 0.5),
        ],
    )
    out = g.linear(gelu, weights, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", [x, out]), weights, f"{prefix}.output.LayerNorm", shape.layer_norm_eps)


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
    pooled_mask, bias = _attention_bias(g)
    for i in range(shape.layers):
        x = _feed_forward(g, _self_attention(g, x, bias, weights, i=i, shape=shape), weights, i, shape)
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="strata")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
