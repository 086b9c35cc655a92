"""Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009), weighted per leg.

Each leg is a ranked list of keys, best first. A key's fused score is

    score(key) = sum over the legs that returned it of  weight_leg / (k + rank_leg)

with 1-based ranks. ``k`` (default 60) flattens the head of each list: with large ``k`` rank 1 and
rank 10 count almost alike; with ``k = 0`` rank 1 dominates. A weight of 0 keeps a leg's ranks in
the result but removes its influence. The output is ordered by score descending, then by key
ascending, so equal scores always come out in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


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
