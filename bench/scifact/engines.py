"""SciFact's engines side by side: the markdown table of a full run, and the two text legs alone.

``python -m bench.scifact.quality --text-legs [--bm25-avg-len N]`` runs :func:`text_legs` (minutes, no
embedder): Tantivy BM25 against the server engine's BM25 sparse vectors on the same documents.
"""

from __future__ import annotations

import shutil
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.scifact import data as q
from strata_retrieval.legs import TextIndex
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import DocumentFilter, document_key
from strata_retrieval.text_index import TantivyTextIndex
from strata_retrieval.vectors.bm25 import DEFAULT_AVG_LEN, Bm25Params
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg


def main_text_legs(extra_avg_len: float | None) -> None:
    flag = f" --bm25-avg-len {extra_avg_len:g}" if extra_avg_len else ""
    report = q.Report(
        q.RESULTS / "scifact_text_legs.json",
        {"command": f"python -m bench.scifact.quality --text-legs{flag}"},
    )
    report.record("date", datetime.now(UTC).isoformat(timespec="seconds"))
    text_legs(report, extra_avg_len)


def text_legs(report: Any, extra_avg_len: float | None) -> None:
    """The two text legs alone, without the embedder: Tantivy BM25 against the server engine's BM25
    sparse vectors (local mode; its dense vectors are a constant placeholder), same documents. The
    server leg runs with ``avg_len`` as the service sets it (the collection's mean, measured by a
    rebuild after ingest), at Qdrant's default 256, and at ``extra_avg_len`` if given."""
    corpus, queries, qrels = q.load_scifact(quick=False)
    documents, messages = q.as_documents(corpus), q.chat_messages(corpus, 2000)
    ids = {document_key(d.scope.tenant_id, d.id): d.id for d in documents}
    data_dir = Path(".data/bench/scifact-text")
    shutil.rmtree(data_dir, ignore_errors=True)
    tantivy = TantivyTextIndex(data_dir)
    for batch in (documents, messages):
        for start in range(0, len(batch), 500):
            tantivy.upsert(batch[start : start + 500])
    found = {"tantivy": _text_quality(tantivy, queries, qrels, ids)}
    report.record("text_legs", found)
    tantivy.close()
    settings: list[float | None] = [None, DEFAULT_AVG_LEN] + ([extra_avg_len] if extra_avg_len else [])
    for avg_len in settings:
        server = QdrantJointIndex(":memory:", IndexManifest("none", 1), bm25=Bm25Params(avg_len=avg_len))
        for batch in (documents, messages):
            for start in range(0, len(batch), 500):
                chunk = batch[start : start + 500]
                server.upsert(chunk, np.ones((len(chunk), 1), dtype=np.float32))
        if avg_len is None:
            server.rebuild(lambda texts: np.ones((len(texts), 1), dtype=np.float32))  # measures the mean
        used = server.bm25_params.avg_len or 0.0
        label = f"qdrant_bm25 avg_len {used:g}" + (" (measured mean)" if avg_len is None else "")
        found[label] = _text_quality(SparseTextLeg(server), queries, qrels, ids)
        report.record("text_legs", found)
        server.close()
        if avg_len is None:
            gap = round(found["tantivy"]["ndcg@10"] - found[label]["ndcg@10"], 4)
            report.record("verdict_text_leg_parity", {"gap": gap, f"within_{PARITY}": gap <= PARITY})


def _text_quality(
    leg: TextIndex, queries: dict[str, str], qrels: dict[str, set[str]], ids: dict[str, str]
) -> dict[str, float]:
    ndcgs, recalls = [], []
    for query_id, text in queries.items():
        ranked = [ids[c.key] for c in leg.search(text, DocumentFilter(tenant_id=q.TENANT), q.EVAL_TOP_K)]
        ndcgs.append(q.ndcg_at_10(ranked, qrels[query_id]))
        recalls.append(len(set(ranked) & qrels[query_id]) / len(qrels[query_id]))
    return {"ndcg@10": round(statistics.fmean(ndcgs), 4), "recall@100": round(statistics.fmean(recalls), 4)}


PARITY = 0.01  # issue 15: the server engine's text leg within this nDCG@10 of Tantivy's


def parity(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The server engine's text leg against the embedded one's (Tantivy), in nDCG@10."""
    tantivy, server = (results[name]["quality"]["fts"]["ndcg@10"] for name in ("embedded", "server"))
    gap = round(tantivy - server, 4)
    return {"tantivy": tantivy, "server_bm25": server, "gap": gap, f"within_{PARITY}": gap <= PARITY}


def side_by_side_markdown(data: dict[str, Any], results: dict[str, dict[str, Any]], labels: list[str]) -> str:
    """The engines' quality in one table (nDCG@10 / Recall@100 per mode), with how it was run."""
    names = list(results)
    lines = [
        f"# SciFact quality, engines side by side ({data['date']})",
        "",
        f"`{data['command']}`; load average at start {data['load_average_at_start']}. "
        "`server` is qdrant-client's local mode (same API and scoring as a Qdrant server; brute force, "
        "so its durations say nothing about a server).",
        "",
        "| mode | " + " | ".join(f"{name} nDCG@10 | {name} Recall@100" for name in names) + " |",
        "|---|" + "---|---|" * len(names),
    ]
    for label in labels:
        cells = [
            f"{results[n]['quality'][label]['ndcg@10']} | {results[n]['quality'][label]['recall@100']}"
            for n in names
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if verdict := data.get("verdict_text_leg_parity"):
        lines += ["", f"Text leg parity (Tantivy minus server BM25, nDCG@10): {verdict}"]
    lines += [
        "",
        "| engine | ingest abstracts/s | ingest messages/s | rebuild s (avg_len) | evaluation s |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        result = results[name]
        rebuild = result.get("rebuild")
        rebuilt = f"{rebuild['seconds']} ({rebuild['bm25_avg_len']})" if rebuild else "-"
        abstracts, chat = result["ingest_abstracts"]["per_second"], result["ingest_messages"]["per_second"]
        lines.append(f"| {name} | {abstracts} | {chat} | {rebuilt} | {result['evaluation_seconds']} |")
    return "\n".join(lines) + "\n"
