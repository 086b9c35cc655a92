"""blend_ranking(): DBSF's scaled score and RRF's reciprocal rank mixed per leg by ``alpha``. The
documented formula as an example, and as properties: its two ends are DBSF and RRF, each key once,
best first with ties by key, and a leg's score scale does not matter."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_retrieval.fusion import blend_ranking, dbsf_ranking, rrf_ranking

scored = st.lists(
    st.tuples(st.text(alphabet="abcdef", min_size=1, max_size=2), st.floats(-50, 50, allow_nan=False)),
    max_size=10,
)
scored_legs = st.dictionaries(st.sampled_from(["vector", "fts"]), scored, max_size=2)
leg_weights = st.dictionaries(
    st.sampled_from(["vector", "fts"]), st.floats(min_value=0.0, max_value=5.0, allow_nan=False)
)
alphas = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
ks = st.floats(min_value=0.0, max_value=200.0, allow_nan=False)


def test_each_leg_adds_alpha_times_its_dbsf_scale_plus_the_rest_times_its_scaled_reciprocal_rank() -> None:
    # vector: 0.9, 0.5, 0.1 -> mean 0.5, sd sqrt(0.32/3); scaled (x - mean + 3 sd) / (6 sd)
    legs = {"vector": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "fts": [("b", 7.0)]}
    ranking = blend_ranking(legs, alpha=0.25, k=10, weights={"vector": 0.5})
    sd = math.sqrt(((0.9 - 0.5) ** 2 + 0 + (0.1 - 0.5) ** 2) / 3)
    scaled = {key: (score - 0.5 + 3 * sd) / (6 * sd) for key, score in legs["vector"]}
    rank_term = {"a": 11 / 11, "b": 11 / 12, "c": 11 / 13}
    expected = {key: 0.5 * (0.25 * scaled[key] + 0.75 * rank_term[key]) for key in scaled}
    expected["b"] += 0.25 * 0.5 + 0.75 * 1.0  # a lone candidate scales to 0.5; rank 1 to 1
    assert ranking.scores == pytest.approx(expected)
    assert ranking.keys == ["b", "a", "c"]
    assert ranking.ranks == {"a": {"vector": 1}, "b": {"vector": 2, "fts": 1}, "c": {"vector": 3}}


@given(scored_legs, leg_weights)
def test_alpha_one_is_dbsf(legs: dict[str, list[tuple[str, float]]], weights: dict[str, float]) -> None:
    blend, dbsf = blend_ranking(legs, alpha=1.0, weights=weights), dbsf_ranking(legs, weights=weights)
    assert blend.keys == dbsf.keys
    assert blend.scores == pytest.approx(dbsf.scores)
    assert blend.ranks == dbsf.ranks


@given(scored_legs, leg_weights, ks)
def test_alpha_zero_is_rrf_scaled_by_k_plus_one(
    legs: dict[str, list[tuple[str, float]]], weights: dict[str, float], k: float
) -> None:
    blend = blend_ranking(legs, alpha=0.0, k=k, weights=weights)
    rrf = rrf_ranking({leg: [key for key, _ in found] for leg, found in legs.items()}, k=k, weights=weights)
    assert blend.scores == pytest.approx({key: (k + 1) * score for key, score in rrf.scores.items()})
    assert blend.ranks == rrf.ranks


@given(scored_legs, alphas, ks)
def test_every_key_once_best_first_and_ties_by_key(
    legs: dict[str, list[tuple[str, float]]], alpha: float, k: float
) -> None:
    ranking = blend_ranking(legs, alpha=alpha, k=k)
    assert sorted(ranking.keys) == sorted({key for found in legs.values() for key, _ in found})
    order = [(-ranking.scores[key], key) for key in ranking.keys]
    assert order == sorted(order)


whole_scored = st.lists(
    st.tuples(st.text(alphabet="abcdef", min_size=1, max_size=2), st.integers(-50, 50).map(float)),
    max_size=10,
)


@given(
    st.dictionaries(st.sampled_from(["vector", "fts"]), whole_scored, max_size=2),  # spreads rounding keeps
    alphas,
    st.floats(min_value=0.01, max_value=100.0, allow_nan=False),
    st.floats(min_value=-100.0, max_value=100.0, allow_nan=False),
)
def test_a_legs_score_scale_and_offset_do_not_matter(
    legs: dict[str, list[tuple[str, float]]], alpha: float, scale: float, offset: float
) -> None:
    moved = {leg: [(key, score * scale + offset) for key, score in found] for leg, found in legs.items()}
    before, after = blend_ranking(legs, alpha=alpha, k=10), blend_ranking(moved, alpha=alpha, k=10)
    assert after.scores == pytest.approx(before.scores, abs=1e-6)


def test_a_repeated_key_counts_at_its_first_position_only() -> None:
    ranking = blend_ranking({"v": [("a", 3.0), ("b", 2.0), ("a", 1.0)]}, alpha=0.0, k=0)
    assert ranking.scores == {"a": 1.0, "b": 0.5}
    assert ranking.ranks == {"a": {"v": 1}, "b": {"v": 2}}


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan, math.inf])
def test_alpha_outside_zero_to_one_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        blend_ranking({"v": [("a", 1.0)]}, alpha=bad)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_invalid_k_weight_or_score_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="k must"):
        blend_ranking({"v": [("a", 1.0)]}, alpha=0.5, k=bad)
    with pytest.raises(ValueError, match="'v'"):
        blend_ranking({"v": [("a", 1.0)]}, alpha=0.5, weights={"v": bad})
    if not bad < 0:
        with pytest.raises(ValueError, match="finite"):
            blend_ranking({"v": [("a", 1.0), ("b", bad)]}, alpha=0.5)
