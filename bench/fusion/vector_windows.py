"""Passage scoring for the vector leg on SciFact: a document's cosine as the best of its windows.

Run: ``python -m bench.fusion.vector_windows`` after ``python -m bench.fusion.lab collect`` (it reuses the
cached query vectors and the text leg's candidates). The embedder reads the first 256 tokens of a text
(all-MiniLM-L6-v2 was trained on 128), and 60 % of SciFact's abstracts run past ~190 words. Here
each abstract (title + text, as indexed) is also embedded as windows of ``WINDOW`` words every
``STRIDE`` words, and the vector leg scores a document by the best of its whole-text vector and its
windows' (brute force over every vector). LoCoMo's turns are shorter than one window, so its vector
leg would not change. Writes ``.data/bench/lab/vector_windows.json``; bench/fusion/report.py reads it.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import numpy as np

from bench.fusion import LAB
from bench.fusion.lab import CachedEmbedder
from bench.fusion.variants import dbsf, rrf
from bench.scifact import data as sf
from strata_retrieval.main import load_embedder
from strata_retrieval.settings import RetrievalSettings

WINDOW, STRIDE = 96, 48  # ~128 tokens, the model's training length; half overlapping


def windows(text: str) -> list[str]:
    words = text.split()
    if len(words) <= WINDOW:
        return []
    return [" ".join(words[s : s + WINDOW]) for s in range(0, len(words) - WINDOW + STRIDE, STRIDE)]


def main() -> None:
    settings = RetrievalSettings().model_copy(update={"data_dir": LAB / "unused", "log_json": False})
    embedder = CachedEmbedder(load_embedder(settings), LAB / "vectors.pkl")
    corpus, queries, qrels = sf.load_scifact(quick=False)
    documents = sf.as_documents(corpus)
    owners, texts = [], []
    for document in documents:
        for text in [document.text, *windows(document.text)]:
            owners.append(document.id)
            texts.append(text)
    matrix = np.concatenate([embedder.embed_documents(texts[s : s + 256]) for s in range(0, len(texts), 256)])
    embedder.save()
    owner = np.array(owners)
    legs = json.loads((LAB / "scifact_legs.json").read_text())
    whole = np.array([not i or owners[i - 1] != owners[i] for i in range(len(owners))])
    found: dict[str, list[float]] = {
        name: []
        for name in (
            "vector whole",
            "vector best window",
            "rrf whole",
            "rrf best window",
            "dbsf whole",
            "dbsf best window",
        )
    }
    for qid, text in queries.items():
        cosine = matrix @ embedder.embed_query(text)
        fts = [(key, float(score)) for key, score in legs[qid]["fts"]]
        for label, mask in (("whole", whole), ("best window", np.ones_like(whole))):
            best: dict[str, float] = {}
            for doc, score in zip(owner[mask].tolist(), cosine[mask].tolist(), strict=True):
                if score > best.get(doc, -2.0):
                    best[doc] = score
            vector = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:100]
            relevant = qrels[qid]
            found[f"vector {label}"].append(sf.ndcg_at_10([k for k, _ in vector], relevant))
            found[f"rrf {label}"].append(sf.ndcg_at_10(rrf(vector, fts, (1.0, 60.0, 50.0)), relevant))
            found[f"dbsf {label}"].append(sf.ndcg_at_10(dbsf(vector, fts, (1.0, 50.0)), relevant))
    result: dict[str, Any] = {
        "window_words": WINDOW,
        "stride_words": STRIDE,
        "vectors": len(texts),
        "documents": len(documents),
        "ndcg@10": {name: round(statistics.fmean(values), 4) for name, values in found.items()},
    }
    print(json.dumps(result), flush=True)
    (LAB / "vector_windows.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
