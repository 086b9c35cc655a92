"""How fast the embedder is at each precision: ``python -m bench.perf.embedder_speed``.

Query latency (one text, as a search embeds it) over 300 benchmark queries, and throughput on 1,000
chat-length documents, for fp32 (batches of 32) and int8 (each text alone, two at once on
single-threaded runs, as the service runs it; one at a time on two threads, and batched int8, are
shown too, for the cost of those choices). Also the cosine between each document's
int8 and fp32 vectors. Writes ``bench/results/embedder_speed.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.perf.corpus import chat_documents, queries
from bench.perf.serve import MODEL_CACHE
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder, Precision
from strata_retrieval.embedding.protocol import Vectors

RESULTS = Path(__file__).resolve().parent.parent / "results" / "embedder_speed.json"


def _query_p50_ms(model: OnnxSentenceEmbedder, texts: list[str]) -> float:
    for text in texts[:20]:
        model.embed_query(text)
    times = []
    for text in texts:
        began = time.perf_counter()
        model.embed_query(text)
        times.append(time.perf_counter() - began)
    return round(statistics.median(times) * 1e3, 3)


def _docs_per_second(model: OnnxSentenceEmbedder, texts: list[str]) -> tuple[float, Vectors]:
    model.embed_documents(texts[:64])
    began = time.perf_counter()
    vectors = model.embed_documents(texts)
    return round(len(texts) / (time.perf_counter() - began), 1), vectors


def _on_query_session(model: OnnxSentenceEmbedder, batch_size: int) -> OnnxSentenceEmbedder:
    """Documents on the query's two-thread session, ``batch_size`` at a time (not what ``load`` does
    for int8: it runs each text alone, two at once on single-threaded sessions)."""
    return OnnxSentenceEmbedder(model._session, model._tokenizer, name=model.name, batch_size=batch_size)


def main() -> None:
    asked, documents = queries(300), chat_documents(1000)
    fp32 = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=Precision.FP32)
    int8 = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=Precision.INT8)
    fp32_rate, exact = _docs_per_second(fp32, documents)
    int8_rate, quantised = _docs_per_second(int8, documents)
    sequential_rate, _ = _docs_per_second(_on_query_session(int8, 1), documents)
    batched_rate, _ = _docs_per_second(_on_query_session(int8, 32), documents)
    cosine = np.sum(exact * quantised, axis=1)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": os.getloadavg(),
        "query_p50_ms": {"fp32": _query_p50_ms(fp32, asked), "int8": _query_p50_ms(int8, asked)},
        "documents_per_second": {
            "fp32 (batches of 32)": fp32_rate,
            "int8 (each text alone, two at once: the service's default)": int8_rate,
            "int8 (each text alone, one at a time on two threads)": sequential_rate,
            "int8 (batches of 32, not deterministic)": batched_rate,
        },
        "int8_vs_fp32_cosine": {
            "min": round(float(cosine.min()), 4),
            "p1": round(float(np.percentile(cosine, 1)), 4),
            "mean": round(float(cosine.mean()), 4),
        },
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
