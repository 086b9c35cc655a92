"""dbsf_ranking(): distribution-based score fusion, as examples and as properties."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_retrieval.fusion import dbsf_ranking, rrf_ranking


def _scaled(scores: list[float]) -> list[float]:
    mean, sd = statistics.fmean(scores), statistics.pstdev(scores)
    return [(s - (mean - 3 * sd)) / (6 * sd) for s in scores]


def test_each_leg_is_scaled_by_mean_and_three_sd_then_weighted_and_summed() -> None:
    vector = [("a", 0.9), ("b", 0.5), ("c", 0.4)]
    fts = [("b", 30.0), ("d", 10.0)]
    ranking = dbsf_ranking({"vector": vector, "fts": fts}, weights={"vector": 0.5, "fts": 1.0})
    v, f = _scaled([0.9, 0.5, 0.4]), _scaled([30.0, 10.0])
    assert ranking.scores == pytest.approx(
        {"a": 0.5 * v[0], "b": 0.5 * v[1] + f[0], "c": 0.5 * v[2], "d": f[1]}
    )
    assert ranking.keys == ["b", "a", "d", "c"]
    assert ranking.ranks == {
        "a": {"vector": 1},
        "b": {"vector": 2, "fts": 1},
        "c": {"vector": 3},
        "d": {"fts": 2},
    }


def test_a_clear_score_lead_beats_a_better_rank_sum() -> None:
    """Where RRF and DBSF part: "a" leads the vector leg by far and is last in BM25 by a hair; "b" is
    second in both legs. RRF, by ranks, puts "b" above "a"; DBSF, by scores, puts "a" above "b"."""
    legs = {
        "vector": [("a", 0.95), ("b", 0.40), ("c", 0.39), ("d", 0.38)],
        "fts": [("c", 12.0), ("b", 11.9), ("d", 11.8), ("a", 11.7)],
    }
    by_score = dbsf_ranking(legs).keys
    by_rank = rrf_ranking({leg: [k for k, _ in found] for leg, found in legs.items()}).keys
    assert by_score.index("a") < by_score.index("b")
    assert by_rank.index("b") < by_rank.index("a")


def test_the_scale_of_a_leg_does_not_matter() -> None:
    legs = {"vector": [("a", 0.8), ("b", 0.6), ("c", 0.1)], "fts": [("c", 9.0), ("b", 5.0), ("a", 4.0)]}
    scaled = {"vector": legs["vector"], "fts": [(k, s * 1000 + 7) for k, s in legs["fts"]]}
    assert dbsf_ranking(scaled).scores == pytest.approx(dbsf_ranking(legs).scores)


def test_scores_that_do_not_spread_scale_to_one_half() -> None:
    assert dbsf_ranking({"fts": [("a", 3.0)]}).scores == {"a": 0.5}
    assert dbsf_ranking({"fts": [("a", 2.0), ("b", 2.0)]}).scores == {"a": 0.5, "b": 0.5}


def test_equal_scores_are_ordered_by_key_and_a_repeated_key_counts_once() -> None:
    ranking = dbsf_ranking({"vector": [("z", 1.0), ("y", 0.5)], "fts": [("y", 1.0), ("z", 0.5), ("y", 0.1)]})
    assert ranking.keys == ["y", "z"]
    assert ranking.scores["y"] == pytest.approx(ranking.scores["z"])
    assert ranking.ranks["y"] == {"vector": 2, "fts": 1}


def test_weight_zero_keeps_the_rank_without_influence() -> None:
    ranking = dbsf_ranking(
        {"vector": [("a", 0.9), ("b", 0.1)], "fts": [("b", 5.0), ("a", 1.0)]}, weights={"vector": 0.0}
    )
    assert ranking.keys == ["b", "a"]
    assert ranking.ranks["a"] == {"vector": 1, "fts": 2}


def test_empty_legs_fuse_to_nothing() -> None:
    assert dbsf_ranking({"vector": [], "fts": []}).keys == []


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_invalid_weight_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="weight"):
        dbsf_ranking({"v": [("a", 1.0)]}, weights={"v": bad})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_score_that_is_not_finite_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        dbsf_ranking({"v": [("a", 1.0), ("b", bad)]})


scored = st.lists(
    st.tuples(st.text(alphabet="abcdef", min_size=1, max_size=2), st.floats(-50, 50, allow_nan=False)),
    max_size=10,
)


@given(st.dictionaries(st.sampled_from(["vector", "fts"]), scored, max_size=2))
def test_every_key_once_best_first_and_ties_by_key(legs: dict[str, list[tuple[str, float]]]) -> None:
    ranking = dbsf_ranking(legs)
    assert sorted(ranking.keys) == sorted({key for found in legs.values() for key, _ in found})
    order = [(-ranking.scores[key], key) for key in ranking.keys]
    assert order == sorted(order)
