"""Fusion and text-leg variants, measured on SciFact and on LoCoMo from one set of leg candidates.

Run: ``python -m bench.fusion.lab collect`` once (indexes SciFact's 5,183 abstracts and every LoCoMo
conversation into a fresh embedded engine, embeddings cached under ``.data/bench/lab``, and keeps each
leg's top 100 with scores per query), then ``python -m bench.fusion.lab evaluate`` (seconds): every
fusion variant's SciFact nDCG@10 and, on LoCoMo, its any@10 with its parameters chosen by
leave-one-conversation-out (bench/locomo/selection.py's folds) beside the served RRF's.

LoCoMo is indexed as MemoryService indexes recall by default (speaker-prefixed text, the previous
turn as context of the text leg only); SciFact as ``make bench-quality`` does (title + abstract).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.fusion import LAB
from bench.locomo import score_fusion as locomo_docs
from bench.locomo.selection import scored
from bench.locomo.services import conversations, load_questions
from bench.scifact import data as sf
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.fusion import fuse
from strata_retrieval.main import load_embedder, open_engine
from strata_retrieval.model import (
    DocumentFilter,
    LegWeights,
    SearchMode,
    SearchQuery,
    document_key,
)
from strata_retrieval.settings import RetrievalSettings

DEPTH = 100


class CachedEmbedder:
    """An embedder whose vectors persist on disk between runs (keyed by the text's SHA-1)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner, self.path = inner, path
        self.cache: dict[str, Vectors] = pickle.loads(path.read_bytes()) if path.exists() else {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _key(self, kind: str, text: str) -> str:
        return kind + hashlib.sha1(text.encode()).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if self._key("d", t) not in self.cache]
        if missing:
            for text, row in zip(missing, self.inner.embed_documents(missing), strict=True):
                self.cache[self._key("d", text)] = row
        return np.stack([self.cache[self._key("d", t)] for t in texts])

    def embed_query(self, text: str) -> Vectors:
        key = self._key("q", text)
        if key not in self.cache:
            self.cache[key] = self.inner.embed_query(text)
        return self.cache[key]

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.cache))


def _legs(engine: Any, text: str, flt: DocumentFilter, ids: dict[str, str]) -> dict[str, list[list[Any]]]:
    query = SearchQuery(
        text=text, mode=SearchMode.HYBRID, filter=flt, top_k=DEPTH, vector_depth=DEPTH, fts_depth=DEPTH
    )
    return {leg: [[ids[c.key], c.score] for c in found] for leg, found in engine.candidates(query).items()}


def _engine(name: str, **update: Any) -> tuple[Any, CachedEmbedder]:
    """A fresh embedded engine of its own: Tantivy's IDF spans the whole index, every tenant."""
    LAB.mkdir(parents=True, exist_ok=True)
    data_dir = LAB / name
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = RetrievalSettings().model_copy(update={"data_dir": data_dir, "log_json": False, **update})
    embedder = CachedEmbedder(load_embedder(settings), LAB / "vectors.pkl")
    return open_engine(settings, embedder), embedder


def collect(which: str) -> None:
    if which in ("both", "scifact"):
        collect_scifact()
    if which in ("both", "locomo"):
        collect_locomo()


def collect_scifact() -> None:
    engine, embedder = _engine("index-scifact")
    corpus, queries, _ = sf.load_scifact(quick=False)
    documents = sf.as_documents(corpus)
    for start in range(0, len(documents), 64):
        engine.upsert(documents[start : start + 64])
    embedder.save()
    ids = {document_key(d.scope.tenant_id, d.id): d.id for d in documents}
    flt = DocumentFilter(tenant_id=sf.TENANT)
    scifact = {qid: _legs(engine, text, flt, ids) for qid, text in queries.items()}
    (LAB / "scifact_legs.json").write_text(json.dumps(scifact))
    print("scifact collected", flush=True)
    embedder.save()
    engine.close()


def _served_top20(engine: Any, text: str, flt: DocumentFilter) -> list[str]:
    """The hybrid search MemoryService's recall search sends, on an engine at its default fusion."""
    s = MemorySettings()
    depth = s.recall_candidate_depth
    query = SearchQuery(
        text=text,
        mode=SearchMode.HYBRID,
        filter=flt,
        top_k=20,
        rrf_k=s.recall_rrf_k,
        weights=LegWeights(vector=s.recall_vector_weight, fts=s.recall_fts_weight),
        vector_depth=depth,
        fts_depth=depth,
    )
    return [hit.document.id.split("/", 1)[1] for hit in engine.search(query).hits]


def _local_top20(legs: dict[str, list[list[Any]]]) -> list[str]:
    """The same fusion from the kept legs, as bench/fusion/corpus_out.py computes it."""
    s = MemorySettings()
    depth = s.recall_candidate_depth
    fused, _ = fuse(
        {leg: [(key, score) for key, score in found[:depth]] for leg, found in legs.items()},
        RetrievalSettings().fusion_setting,
        rrf_k=s.recall_rrf_k,
        weights={VECTOR: s.recall_vector_weight, FTS: s.recall_fts_weight},
    )
    return sorted(fused.keys, key=lambda key: (-fused.scores[key], key))[:20]


def collect_locomo() -> None:
    """Also checks that the lab's fusion at the service's default (as bench/fusion/corpus_out.py
    computes it) is what an engine at its defaults serves for MemoryService's recall request (top 20,
    every question)."""
    engine, embedder = _engine("index-locomo")
    locomo: dict[str, Any] = {}
    same = total = 0
    for conv in conversations():
        docs = locomo_docs.documents(conv)
        for start in range(0, len(docs), 64):
            engine.upsert(docs[start : start + 64])
        conv_ids = {document_key(locomo_docs.TENANT, d.id): d.id.split("/", 1)[1] for d in docs}
        conv_flt = DocumentFilter(tenant_id=locomo_docs.TENANT, agent_ids=(conv,))
        questions, _ = scored(load_questions(conv))
        for q in questions:
            legs = locomo[f"{conv}#{q.index}"] = _legs(engine, q.text, conv_flt, conv_ids)
            same += _served_top20(engine, q.text, conv_flt) == _local_top20(legs)
            total += 1
        print(conv, "collected", flush=True)
    embedder.save()
    engine.close()
    (LAB / "locomo_legs.json").write_text(json.dumps(locomo))
    check = {"served_default_top20_equal_to_local": same, "questions": total}
    (LAB / "locomo_served_check.json").write_text(json.dumps(check) + "\n")
    print(check, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=["collect", "evaluate"])
    parser.add_argument("--only", choices=["both", "scifact", "locomo"], default="both")
    args = parser.parse_args()
    if args.step == "collect":
        collect(args.only)
    else:
        from bench.fusion import variants as fusion_variants

        fusion_variants.main()


if __name__ == "__main__":
    main()
