"""The distribution-based score fusion rows of ``make bench-quality`` (bench/scifact/quality.py).

Each row fuses one claim's candidates as a RetrievalService started with
``STRATA_RETRIEVAL_FUSION=dbsf`` does (:func:`strata_retrieval.fusion.dbsf_ranking` over each leg's
top ``depth``), ties by document id: at the archival defaults (equal weights, the depth a top-10
search fetches), at depth 100, and at the weights and depth MemoryService sends for recall search
(chosen by leave-one-conversation-out on LoCoMo for RRF, and again for DBSF: bench/results/scifact_fusion.md).
"""

from __future__ import annotations

from strata_memory.settings import MemorySettings
from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.fusion import dbsf_ranking
from strata_retrieval.model import ScoredKey, default_depth


def dbsf_rows() -> dict[str, tuple[float, int]]:
    """Label -> (vector weight, depth); the text leg's weight is 1."""
    s = MemorySettings()
    depth = default_depth(10)
    archival = (s.archival_vector_weight / s.archival_fts_weight, s.archival_candidate_depth or depth)
    recall = (s.recall_vector_weight / s.recall_fts_weight, s.recall_candidate_depth or depth)
    return {
        f"hybrid dbsf, archival weights (vector {archival[0]:g}, depth {archival[1]})": archival,
        "hybrid dbsf, equal weights, depth 100": (1.0, 100),
        f"hybrid dbsf, recall weights (vector {recall[0]:g}, depth {recall[1]})": recall,
    }


def dbsf_rankings(candidates: dict[str, list[ScoredKey]], ids: dict[str, str]) -> dict[str, list[str]]:
    """Every DBSF row's ranking of one claim's candidates (storage keys, best first)."""
    out = {}
    for label, (vector_weight, depth) in dbsf_rows().items():
        legs = {leg: [(c.key, c.score) for c in found[:depth]] for leg, found in candidates.items()}
        fused = dbsf_ranking(legs, weights={VECTOR: vector_weight, FTS: 1.0})
        out[label] = sorted(fused.keys, key=lambda key: (-fused.scores[key], ids[key]))
    return out
