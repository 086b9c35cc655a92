"""Text-leg variants on SciFact and LoCoMo, fused with the vector leg ``bench.fusion.lab collect`` kept.

Run: ``python -m bench.fusion.text_legs`` (no embedder; a few minutes). Each variant is a Tantivy
index built here over the same documents the served text leg indexes; it is scored alone (SciFact
nDCG@10, LoCoMo any@10) and fused by the served RRF with the cached vector leg (archival defaults on
SciFact, the recall defaults on LoCoMo). Variants:

* ``served``: the service's index and query (en_stem, query stop words dropped);
* ``no query stop words`` / ``query terms once`` (each distinct word once, as the server engine's
  sparse query does) / ``index stop words`` (English stop words removed at index time too, as
  Qdrant's BM25 does);
* ``title field xN`` (SciFact only: the title as a second field, boosted N times; LoCoMo has no
  titles): what a document title would give if the API carried one;
* ``windows W/S`` (SciFact only): BM25 of the best window of W words (stride S) of each abstract.
"""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tantivy

from bench.fusion import LAB
from bench.fusion.variants import Locomo, dbsf, rrf
from bench.locomo import score_fusion as locomo_docs
from bench.locomo.selection import evidence_ranks
from bench.locomo.services import conversations
from bench.scifact import data as sf
from strata_memory.settings import MemorySettings
from strata_retrieval.text_index import QUERY_STOPWORDS, query_words, search_terms


@dataclass(frozen=True)
class Variant:
    name: str
    terms: Callable[[str], list[str]] = search_terms
    index_stopwords: bool = False
    title_boost: float = 0.0  # 0: title and abstract in one field, as served
    window: tuple[int, int] | None = None


def _once(text: str) -> list[str]:
    return list(dict.fromkeys(word.lower() for word in search_terms(text)))


VARIANTS = [
    Variant("served"),
    Variant("no query stop words", terms=query_words),
    Variant("query terms once", terms=_once),
    Variant("index stop words", index_stopwords=True),
    Variant("title field x1", title_boost=1.0),
    Variant("title field x2", title_boost=2.0),
    Variant("title field x3", title_boost=3.0),
    Variant("windows 100/50", window=(100, 50)),
    Variant("windows 150/75", window=(150, 75)),
]


class Index:
    def __init__(self, path: Path, variant: Variant) -> None:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        self.variant = variant
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("key", stored=True, tokenizer_name="raw")
        builder.add_text_field("group", stored=False, tokenizer_name="raw")
        tokenizer = "lab" if variant.index_stopwords else "en_stem"
        builder.add_text_field("text", stored=False, tokenizer_name=tokenizer)
        builder.add_text_field("title", stored=False, tokenizer_name=tokenizer)
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema, path=str(path))
        if variant.index_stopwords:
            analyzer = (
                tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                .filter(tantivy.Filter.remove_long(40))
                .filter(tantivy.Filter.lowercase())
                .filter(tantivy.Filter.stopword("english"))
                .filter(tantivy.Filter.stemmer("english"))
                .build()
            )
            self.index.register_tokenizer("lab", analyzer)

    def add(self, rows: Sequence[tuple[str, str, str, str]]) -> None:
        """(key, group, title, text) rows; windows are cut here."""
        writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        for key, group, raw_title, raw_text in rows:
            text, title = raw_text, raw_title
            if self.variant.title_boost == 0:
                text, title = f"{raw_title} {raw_text}".strip(), ""
            pieces = [text]
            if self.variant.window:
                size, stride = self.variant.window
                words = text.split()
                starts = range(0, max(1, len(words) - size + stride), stride)
                pieces = [" ".join(words[s : s + size]) for s in starts] or [text]
            for piece in pieces:
                writer.add_document(tantivy.Document(key=key, group=group, title=title, text=piece))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def search(self, text: str, group: str, limit: int) -> list[tuple[str, float]]:
        words = self.variant.terms(text)
        if not words:
            return []
        fields = ["text", "title"] if self.variant.title_boost else ["text"]
        boosts = {"title": self.variant.title_boost} if self.variant.title_boost else None
        matched = self.index.parse_query(" ".join(f'"{w}"' for w in words), fields, field_boosts=boosts)
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, matched),
                (
                    tantivy.Occur.Must,
                    tantivy.Query.const_score_query(
                        tantivy.Query.term_query(self.schema, "group", group), 0.0
                    ),
                ),
            ]
        )
        searcher = self.index.searcher()
        fetch = limit * 4 if self.variant.window else limit
        out: dict[str, float] = {}
        for score, address in searcher.search(query, fetch, count=False).hits:
            key = searcher.doc(address)["key"][0]
            out.setdefault(key, float(score))  # hits come best first: the best window counts
        return list(out.items())[:limit]


def main() -> None:
    settings = MemorySettings()
    archival = (settings.archival_vector_weight, settings.rrf_k, 50.0)
    recall = (settings.recall_vector_weight, settings.recall_rrf_k, float(settings.recall_candidate_depth))
    corpus, queries, qrels = sf.load_scifact(quick=False)
    scifact_vec = json.loads((LAB / "scifact_legs.json").read_text())
    locomo = Locomo(json.loads((LAB / "locomo_legs.json").read_text()))
    rows: dict[str, Any] = {}
    for variant in VARIANTS:
        index = Index(LAB / "text-variant", variant)
        index.add([(d["id"], "scifact", d["title"], d["text"]) for d in corpus])
        alone, fused, fused_dbsf = [], [], []
        for qid, text in queries.items():
            fts = index.search(text, "scifact", 100)
            vector = [(k, float(s)) for k, s in scifact_vec[qid]["vector"]]
            alone.append(sf.ndcg_at_10([k for k, _ in fts], qrels[qid]))
            fused.append(sf.ndcg_at_10(rrf(vector, fts, archival), qrels[qid]))
            fused_dbsf.append(sf.ndcg_at_10(dbsf(vector, fts, (archival[0], archival[2])), qrels[qid]))
        row: dict[str, Any] = {
            "scifact_fts": round(statistics.fmean(alone), 4),
            "scifact_hybrid_archival_defaults": round(statistics.fmean(fused), 4),
            "scifact_dbsf_archival_defaults": round(statistics.fmean(fused_dbsf), 4),
        }
        if not variant.title_boost and not variant.window:  # LoCoMo: messages, no titles
            index = Index(LAB / "text-variant", variant)
            for conv in conversations():
                index.add(
                    [(d.id.split("/", 1)[1], conv, "", d.full_text) for d in locomo_docs.documents(conv)]
                )
            hits_alone, hits_fused, hits_dbsf = [], [], []
            for qid, q in locomo.questions.items():
                fts = index.search(q.text, q.conv, 100)
                vector = [(k, float(s)) for k, s in locomo.legs[qid]["vector"]]
                hits_alone.append(evidence_ranks(q, [k for k, _ in fts]).hit("any@10"))
                hits_fused.append(evidence_ranks(q, rrf(vector, fts, recall)).hit("any@10"))
                hits_dbsf.append(evidence_ranks(q, dbsf(vector, fts, (recall[0], recall[2]))).hit("any@10"))
            row["locomo_fts_any@10"] = round(statistics.fmean(hits_alone), 4)
            row["locomo_hybrid_recall_defaults_any@10"] = round(statistics.fmean(hits_fused), 4)
            row["locomo_dbsf_recall_defaults_any@10"] = round(statistics.fmean(hits_dbsf), 4)
        rows[variant.name] = row
        print(variant.name, json.dumps(row), flush=True)
    (LAB / "text_variants.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    assert QUERY_STOPWORDS
    main()
