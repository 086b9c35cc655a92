"""How a hybrid search fuses its legs: Reciprocal Rank Fusion, distribution-based score fusion, or a
blend of the two.

Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009), weighted per leg.

Each leg is a ranked list of keys, best first. A key's fused score is

    score(key) = sum over the legs that returned it of  weight_leg / (k + rank_leg)

with 1-based ranks. ``k`` (default 60) flattens the head of each list: with large ``k`` rank 1 and
rank 10 count almost alike; with ``k = 0`` rank 1 dominates. A weight of 0 keeps a leg's ranks in
the result but removes its influence. The output is ordered by score descending, then by key
ascending, so equal scores always come out in the same order.

Distribution-based score fusion (DBSF; Mazzeschi 2023, Qdrant's ``dbsf`` fusion) uses the legs'
scores instead of their ranks. Each leg's scores are scaled by their own distribution over the
candidates that leg returned, mean - 3 sd -> 0 and mean + 3 sd -> 1, and a key's fused score is

    score(key) = sum over the legs that returned it of  weight_leg * scaled_leg(key)

so cosine similarities and BM25 scores, on unrelated scales, count alike; unlike min-max scaling, the
bounds do not hang on the single best and worst candidate. A leg whose candidates all score the same
(or a single candidate) scales them to 0.5. Same order and tie rule as RRF.

The blend mixes both per leg, ``alpha`` of DBSF's scaled score and ``1 - alpha`` of RRF's reciprocal
rank scaled to 1 at rank 1:

    score(key) = sum over the legs that returned it of
                 weight_leg * (alpha * scaled_leg(key) + (1 - alpha) * (k + 1) / (k + rank_leg))

so a leg's clear score lead counts (DBSF) while a leg's near-ties do not swing the order (RRF).
``alpha`` 1 is DBSF, 0 orders as RRF. Chosen by leave-one-corpus-out over SciFact and LoCoMo:
bench/fusion/corpus_out.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from strata_retrieval.model import Fusion


@dataclass(frozen=True)
class FusionSetting:
    """A fusion and its knobs: ``alpha`` and ``rank_k`` are the blend's (the request's RRF ``k`` is
    RRF's own, and every hit's ``rrf_score`` whatever the method)."""

    method: Fusion = Fusion.BLEND
    alpha: float = 0.5
    rank_k: float = 5.0


@dataclass(frozen=True)
class Fused:
    key: str
    score: float
    ranks: Mapping[str, int] = field(default_factory=dict)  # leg name -> 1-based rank in that leg


@dataclass(frozen=True)
class Ranking:
    """Every fused key, best first, with its score and its 1-based rank in each leg. A search reads
    only the head of it, so :class:`Fused` entries are built on demand (:meth:`entry`)."""

    keys: list[str]
    scores: dict[str, float]
    ranks: dict[str, dict[str, int]]

    def entry(self, index: int) -> Fused:
        key = self.keys[index]
        return Fused(key=key, score=self.scores[key], ranks=self.ranks[key])


def rrf(
    legs: Mapping[str, Sequence[str]], *, k: float = 60.0, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """Fuse ranked lists of keys; ``weights`` default to 1.0 for every leg.

    A rank is a key's 1-based position in its leg's list as given; a key repeated within one leg
    counts at its first (best) position only. ``k`` and every weight must
    be finite and >= 0 (``ValueError`` otherwise; callers validate user input before this point).
    """
    ranking = rrf_ranking(legs, k=k, weights=weights)
    return [ranking.entry(index) for index in range(len(ranking.keys))]


def rrf_ranking(
    legs: Mapping[str, Sequence[str]], *, k: float = 60.0, weights: Mapping[str, float] | None = None
) -> Ranking:
    """:func:`rrf` as a :class:`Ranking`, without building an entry per key."""
    if not (math.isfinite(k) and k >= 0):
        raise ValueError(f"rrf k must be finite and >= 0, got {k}")
    weights = weights or {}
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, keys in legs.items():
        weight = weights.get(leg, 1.0)
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight of leg {leg!r} must be finite and >= 0, got {weight}")
        for rank, key in enumerate(keys, start=1):
            key_ranks = ranks.setdefault(key, {})
            if leg in key_ranks:
                continue
            key_ranks[leg] = rank
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)  # rank >= 1, k >= 0: never 0
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return Ranking(keys=ordered, scores=scores, ranks=ranks)


def dbsf_ranking(
    legs: Mapping[str, Sequence[tuple[str, float]]], *, weights: Mapping[str, float] | None = None
) -> Ranking:
    """Fuse each leg's (key, score) candidates, best first, by distribution-based score fusion;
    ``weights`` default to 1.0 for every leg. A key repeated within one leg counts at its first
    position only. Every weight and score must be finite (and weights >= 0): ``ValueError``."""
    weights = weights or {}
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, candidates in legs.items():
        weight = weights.get(leg, 1.0)
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight of leg {leg!r} must be finite and >= 0, got {weight}")
        first: dict[str, tuple[int, float]] = {}  # key -> (1-based rank, score) where it first comes
        for rank, (key, score) in enumerate(candidates, start=1):
            if not math.isfinite(score):
                raise ValueError(f"score of {key!r} in leg {leg!r} must be finite, got {score}")
            first.setdefault(key, (rank, score))
        scaled = _three_sigma([score for _, score in first.values()])
        for (key, (rank, _)), value in zip(first.items(), scaled, strict=True):
            ranks.setdefault(key, {})[leg] = rank
            scores[key] = scores.get(key, 0.0) + weight * value
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return Ranking(keys=ordered, scores=scores, ranks=ranks)


def blend_ranking(
    legs: Mapping[str, Sequence[tuple[str, float]]],
    *,
    alpha: float,
    k: float = 60.0,
    weights: Mapping[str, float] | None = None,
) -> Ranking:
    """Fuse each leg's (key, score) candidates, best first, by a blend of DBSF and RRF: a key's
    score from a leg is ``weight * (alpha * scaled + (1 - alpha) * (k + 1) / (k + rank))``, where
    ``scaled`` is :func:`dbsf_ranking`'s mean +- 3 sd scaling and the rank term is RRF's, scaled to 1
    at rank 1 (so both terms are on one scale). ``alpha`` 1 is DBSF; 0 orders as RRF with this ``k``.
    A key repeated within one leg counts at its first position only. ``alpha`` must be in [0, 1],
    ``k`` and every weight finite and >= 0, every score finite: ``ValueError``."""
    if not (0.0 <= alpha <= 1.0):
        raise ValueError(f"blend alpha must be in [0, 1], got {alpha}")
    if not (math.isfinite(k) and k >= 0):
        raise ValueError(f"rrf k must be finite and >= 0, got {k}")
    weights = weights or {}
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, candidates in legs.items():
        weight = weights.get(leg, 1.0)
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight of leg {leg!r} must be finite and >= 0, got {weight}")
        first: dict[str, tuple[int, float]] = {}
        for rank, (key, score) in enumerate(candidates, start=1):
            if not math.isfinite(score):
                raise ValueError(f"score of {key!r} in leg {leg!r} must be finite, got {score}")
            first.setdefault(key, (rank, score))
        scaled = _three_sigma([score for _, score in first.values()])
        for (key, (rank, _)), value in zip(first.items(), scaled, strict=True):
            ranks.setdefault(key, {})[leg] = rank
            blended = alpha * value + (1.0 - alpha) * (k + 1.0) / (k + rank)
            scores[key] = scores.get(key, 0.0) + weight * blended
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return Ranking(keys=ordered, scores=scores, ranks=ranks)


def fuse(
    legs: Mapping[str, Sequence[tuple[str, float]]],
    fusion: FusionSetting,
    *,
    rrf_k: float,
    weights: Mapping[str, float] | None = None,
) -> tuple[Ranking, Mapping[str, float]]:
    """The legs' (key, score) candidates, best first, fused by ``fusion``; and every key's RRF score
    with ``rrf_k`` and the same weights (what a hit's ``rrf_score`` reports under every method)."""
    by_rank = rrf_ranking(
        {leg: [key for key, _ in found] for leg, found in legs.items()}, k=rrf_k, weights=weights
    )
    if fusion.method is Fusion.DBSF:
        return dbsf_ranking(legs, weights=weights), by_rank.scores
    if fusion.method is Fusion.BLEND:
        return blend_ranking(legs, alpha=fusion.alpha, k=fusion.rank_k, weights=weights), by_rank.scores
    return by_rank, by_rank.scores


def _three_sigma(values: Sequence[float]) -> list[float]:
    """``values`` scaled so that mean - 3 sd is 0 and mean + 3 sd is 1 (population sd); 0.5 each when
    they do not spread."""
    if not values:
        return []
    mean = math.fsum(values) / len(values)
    # plain floats, not statistics.pstdev (it computes exactly, in fractions: bench/perf/findings.md)
    spread = 6 * math.sqrt(math.fsum((value - mean) ** 2 for value in values) / len(values))
    if not spread > 0:
        return [0.5] * len(values)
    low = mean - spread / 2
    return [(value - low) / spread for value in values]
