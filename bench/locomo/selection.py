"""Scoring and leave-one-conversation-out selection for the LoCoMo benchmark (bench/locomo/recall.py).

Fusion here is RetrievalService's own: :func:`fuse` is :func:`strata_retrieval.fusion.rrf` over the
two legs' rankings of message ids (each cut to the setting's depth), ordered as the engine orders hits
(score, then document id); :func:`fuse_scored` is :func:`strata_retrieval.fusion.fuse` over the legs'
(id, score) candidates under the setting's method: RRF, or the blend the service serves by default
(its alpha and rank k as RetrievalSettings has them). The benchmark counts how often this reproduces
the served hybrid top 20; it must be every question.

A question is scored only when it names evidence turns; the others are counted and excluded.
"Any" at k: at least one evidence turn in the top k; "all": every one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.fusion import FusionSetting, rrf
from strata_retrieval.fusion import fuse as service_fuse
from strata_retrieval.model import Fusion
from strata_retrieval.settings import RetrievalSettings

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
METRICS = tuple(f"{kind}@{k}" for kind in ("any", "all") for k in KS)
OBJECTIVE = "any@10"
"""What a fold maximises over its training conversations (ties: the sum of the other metrics)."""
MISS = math.inf


@dataclass(frozen=True)
class Question:
    conv: str
    index: int
    text: str
    category: int
    evidence: tuple[str, ...]

    @property
    def key(self) -> tuple[str, int]:
        return (self.conv, self.index)


@dataclass(frozen=True, order=True)
class Setting:
    """One grid point: where the context turn is indexed, and how the two legs are fused."""

    context: str  # "none", "vector" (vector leg only), "text" (text leg only), "both"
    vector_weight: float
    rrf_k: float
    depth: int
    fts_weight: float = 1.0
    method: str = "rrf"  # a strata_retrieval.model.Fusion value; rrf_k orders hits only under "rrf"

    def label(self) -> str:
        return (
            f"context={self.context} {self.method} w_vec={self.vector_weight:g} w_fts={self.fts_weight:g} "
            f"k={self.rrf_k:g} depth={self.depth}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "method": self.method,
            "vector_weight": self.vector_weight,
            "fts_weight": self.fts_weight,
            "rrf_k": self.rrf_k,
            "depth": self.depth,
        }


def fuse(vector: Sequence[str], fts: Sequence[str], setting: Setting) -> list[str]:
    """The hybrid ranking RetrievalService serves for these legs under ``setting`` (ids, best first)."""
    fused = rrf(
        {VECTOR: vector[: setting.depth], FTS: fts[: setting.depth]},
        k=setting.rrf_k,
        weights={VECTOR: setting.vector_weight, FTS: setting.fts_weight},
    )
    return [entry.key for entry in sorted(fused, key=lambda entry: (-entry.score, entry.key))]


Leg = Sequence[tuple[str, float]]
"""One leg's candidates, best first: (message id, the leg's own score: cosine or BM25)."""


@cache
def served_fusion() -> FusionSetting:
    """RetrievalService's fusion as its settings (environment included) have it."""
    return RetrievalSettings().fusion_setting


def fuse_scored(vector: Leg, fts: Leg, setting: Setting) -> list[str]:
    """The hybrid ranking RetrievalService serves for these candidates under ``setting``, whatever its
    method (ids, best first)."""
    if setting.method == Fusion.RRF:
        return fuse([key for key, _ in vector], [key for key, _ in fts], setting)
    served = served_fusion()
    fused, _ = service_fuse(
        {VECTOR: list(vector[: setting.depth]), FTS: list(fts[: setting.depth])},
        FusionSetting(Fusion(setting.method), alpha=served.alpha, rank_k=served.rank_k),
        rrf_k=setting.rrf_k,
        weights={VECTOR: setting.vector_weight, FTS: setting.fts_weight},
    )
    return fused.keys


@dataclass(frozen=True)
class Ranks:
    """Where a ranking put a question's evidence: best rank of any and rank at which all are in."""

    first: float
    last: float

    def hit(self, metric: str) -> bool:
        kind, k = metric.split("@")
        return (self.first if kind == "any" else self.last) <= int(k)


def evidence_ranks(question: Question, ranked_dias: Sequence[str]) -> Ranks:
    position = {dia: rank for rank, dia in reversed(list(enumerate(ranked_dias[: max(KS)], start=1)))}
    found = [position.get(e, MISS) for e in question.evidence]
    return Ranks(first=min(found), last=max(found))


def scored(questions: Iterable[Question]) -> tuple[list[Question], list[Question]]:
    """(questions that name evidence, the excluded ones that do not)."""
    kept: list[Question] = []
    excluded: list[Question] = []
    for q in questions:
        (kept if q.evidence else excluded).append(q)
    return kept, excluded


def table(questions: Sequence[Question], ranks: Mapping[tuple[str, int], Ranks]) -> dict[str, Any]:
    """Recall per metric, overall and per category."""

    def block(subset: Sequence[Question]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(subset)}
        for metric in METRICS:
            hits = sum(ranks[q.key].hit(metric) for q in subset)
            out[metric] = round(hits / len(subset), 4) if subset else 0.0
        return out

    out = {"overall": block(questions)}
    for category, name in CATEGORIES.items():
        out[f"{category}-{name}"] = block([q for q in questions if q.category == category])
    return out


class Grid:
    """Hit counts of every setting per conversation, for pooled and leave-one-out scores."""

    def __init__(
        self, questions: Sequence[Question], ranks: Mapping[Setting, Mapping[tuple[str, int], Ranks]]
    ):
        self.settings = list(ranks)
        self.convs = sorted({q.conv for q in questions})
        self.size = {c: sum(q.conv == c for q in questions) for c in self.convs}
        self.hits: dict[Setting, dict[str, dict[str, int]]] = {}
        for setting, by_question in ranks.items():
            per_conv = {c: dict.fromkeys(METRICS, 0) for c in self.convs}
            for q in questions:
                for metric in METRICS:
                    per_conv[q.conv][metric] += by_question[q.key].hit(metric)
            self.hits[setting] = per_conv

    def score(self, setting: Setting, convs: Sequence[str]) -> dict[str, float]:
        n = sum(self.size[c] for c in convs)
        return {m: round(sum(self.hits[setting][c][m] for c in convs) / n, 4) for m in METRICS}

    def best(self, convs: Sequence[str], among: Sequence[Setting] | None = None) -> Setting:
        """The setting with the best objective over ``convs`` (pooled), ties by the other metrics."""

        def rank(setting: Setting) -> tuple[float, float]:
            s = self.score(setting, convs)
            return (s[OBJECTIVE], sum(s.values()))

        return max(among or self.settings, key=rank)  # first of equals: the grid's order decides

    def leave_one_out(self, default: Setting, among: Sequence[Setting] | None = None) -> dict[str, Any]:
        """Each conversation held out in turn: the setting best on the others, scored on it."""
        folds: list[dict[str, Any]] = []
        for held in self.convs:
            train = [c for c in self.convs if c != held]
            chosen = self.best(train, among)
            oracle = self.best([held], among)
            folds.append(
                {
                    "held_out": held,
                    "questions": self.size[held],
                    "chosen": chosen.as_dict(),
                    "train": self.score(chosen, train),
                    "held_out_score": self.score(chosen, [held]),
                    "default_on_held_out": self.score(default, [held]),
                    "oracle_on_held_out": {"setting": oracle.as_dict(), **self.score(oracle, [held])},
                }
            )
        values = {m: [f["held_out_score"][m] for f in folds] for m in METRICS}
        total = sum(self.size.values())
        pooled = {
            m: round(sum(f["held_out_score"][m] * f["questions"] for f in folds) / total, 4) for m in METRICS
        }
        return {
            "objective": OBJECTIVE,
            "folds": folds,
            "held_out_pooled": pooled,
            "held_out_spread": {
                m: {"min": min(v), "median": round(statistics.median(v), 4), "max": max(v)}
                for m, v in values.items()
            },
        }
