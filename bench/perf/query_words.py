"""The full-text leg with and without query-side function words: SciFact BM25 quality and latency.

Run: ``python -m bench.perf.query_words [TEXT_INDEX_DIR]``. It indexes the 5,183 SciFact abstracts in
a temporary Tantivy index and prints BM25 nDCG@10 over the 300 claims with every query word and with
``search_terms`` (function words dropped). Given the ``text`` directory of a RetrievalService data
directory holding the bench corpus (tenant ``bench``, agent ``agent-bench``), it also times the text
leg at depth 50 over the 200 bench queries, both ways, twice.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.perf.corpus import queries
from bench.scifact import data as scifact
from strata_retrieval import text_index
from strata_retrieval.model import DocumentFilter

Terms = Callable[[str], list[str]]
WAYS: dict[str, Terms] = {"every word": text_index.query_words, "no function words": text_index.search_terms}


def _with_terms(terms: Terms) -> None:
    setattr(text_index, "search_terms", terms)  # noqa: B010  # the index looks it up at each search


def scifact_ndcg() -> None:
    corpus, claims, qrels = scifact.load_scifact(quick=False)
    documents = scifact.as_documents(corpus)
    ids = {document.key: document.id for document in documents}
    scope = DocumentFilter(tenant_id=scifact.TENANT)
    with tempfile.TemporaryDirectory() as tmp:
        index = text_index.TantivyTextIndex(Path(tmp) / "text")
        for first in range(0, len(documents), 500):
            index.upsert(documents[first : first + 500])
        for name, terms in WAYS.items():
            _with_terms(terms)
            scores = [
                scifact.ndcg_at_10([ids[hit.key] for hit in index.search(text, scope, 100)], qrels[claim])
                for claim, text in claims.items()
            ]
            print(f"SciFact BM25, {name}: nDCG@10 {statistics.fmean(scores):.4f}", flush=True)
        index.close()


def text_leg_latency(directory: Path) -> None:
    index = text_index.TantivyTextIndex(directory)
    scope = DocumentFilter(tenant_id="bench", agent_ids=("agent-bench",))
    asked = queries(200)
    for _ in range(2):
        for name, terms in WAYS.items():
            _with_terms(terms)
            for text in asked[:10]:
                index.search(text, scope, 50)
            took = []
            for text in asked:
                started = time.perf_counter()
                index.search(text, scope, 50)
                took.append((time.perf_counter() - started) * 1e3)
            took.sort()
            print(f"text leg, depth 50, {name}: p50 {took[100]:.2f} ms, p99 {took[197]:.2f} ms", flush=True)
    index.close()


def main() -> None:
    scifact_ndcg()
    if len(sys.argv) > 1:
        text_leg_latency(Path(sys.argv[1]))
    _with_terms(WAYS["no function words"])


if __name__ == "__main__":
    main()
