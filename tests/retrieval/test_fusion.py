"""rrf() and dbsf_ranking() (distribution-based score fusion): the documented formulas, ordering and
tie-breaking, as examples and as properties."""

from __future__ import annotations

import math
import re
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_retrieval.fusion import dbsf_ranking, rrf, rrf_ranking

keys = st.text(alphabet="abcdefgh", min_size=1, max_size=2)
ranked = st.lists(keys, max_size=12)
legs = st.dictionaries(st.sampled_from(["vector", "fts", "third"]), ranked, max_size=3)
weights = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)
ks = st.floats(min_value=0.0, max_value=200.0, allow_nan=False)


def _expected_score(legs: dict[str, list[str]], key: str, k: float, w: dict[str, float]) -> float:
    return sum(w.get(leg, 1.0) / (k + keys.index(key) + 1) for leg, keys in legs.items() if key in keys)


def test_score_is_the_weighted_sum_of_reciprocal_ranks() -> None:
    fused = rrf({"vector": ["a", "b"], "fts": ["b", "c"]}, k=60, weights={"vector": 1.0, "fts": 0.5})
    scores = {f.key: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert scores["c"] == pytest.approx(0.5 / 62)
    assert [f.key for f in fused] == ["b", "a", "c"]


def test_ranks_are_one_based_and_absent_when_a_leg_missed_the_key() -> None:
    fused = {f.key: f for f in rrf({"vector": ["a", "b"], "fts": ["b"]})}
    assert fused["a"].ranks == {"vector": 1}
    assert fused["b"].ranks == {"vector": 2, "fts": 1}


def test_equal_scores_are_ordered_by_key() -> None:
    fused = rrf({"vector": ["z", "y"], "fts": ["y", "z"]})
    assert [f.key for f in fused] == ["y", "z"]


def test_default_k_is_60_and_weights_default_to_one() -> None:
    assert rrf({"vector": ["a"]})[0].score == pytest.approx(1 / 61)


def test_k_zero_lets_rank_one_dominate() -> None:
    assert rrf({"v": ["a"]}, k=0)[0].score == pytest.approx(1.0)


def test_the_ranking_has_the_same_defaults_and_order_as_rrf() -> None:
    ranking = rrf_ranking({"vector": ["a", "b"], "fts": ["b"]})
    assert ranking.keys == ["b", "a"]
    assert ranking.scores == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62 + 1 / 61)}
    assert ranking.ranks == {"a": {"vector": 1}, "b": {"vector": 2, "fts": 1}}
    assert [ranking.entry(i) for i in range(2)] == rrf({"vector": ["a", "b"], "fts": ["b"]})


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_invalid_k_is_refused_naming_it(bad: float) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(f'rrf k must be finite and >= 0, got {bad}')}$"):
        rrf({"v": ["a"]}, k=bad)


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_an_invalid_weight_is_refused_naming_the_leg(bad: float) -> None:
    message = f"weight of leg 'v' must be finite and >= 0, got {bad}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        rrf({"v": ["a"]}, weights={"v": bad})


@given(legs, ks, st.dictionaries(st.sampled_from(["vector", "fts", "third"]), weights))
def test_every_key_once_with_the_formula_score(
    legs: dict[str, list[str]], k: float, w: dict[str, float]
) -> None:
    fused = rrf(legs, k=k, weights=w)
    assert sorted(f.key for f in fused) == sorted({key for keys in legs.values() for key in keys})
    for entry in fused:
        assert entry.score == pytest.approx(_expected_score(legs, entry.key, k, w))
        assert entry.ranks == {
            leg: keys.index(entry.key) + 1 for leg, keys in legs.items() if entry.key in keys
        }


@given(legs, ks, st.dictionaries(st.sampled_from(["vector", "fts", "third"]), weights))
def test_output_is_sorted_by_score_then_key(
    legs: dict[str, list[str]], k: float, w: dict[str, float]
) -> None:
    fused = rrf(legs, k=k, weights=w)
    assert fused == sorted(fused, key=lambda f: (-f.score, f.key))


@given(ranked, ranked, ks)
def test_a_zero_weight_leg_does_not_change_the_order_of_the_others(
    vector: list[str], fts: list[str], k: float
) -> None:
    alone = [f.key for f in rrf({"vector": vector}, k=k)]
    with_silent_leg = [f.key for f in rrf({"vector": vector, "fts": fts}, k=k, weights={"fts": 0.0})]
    assert [key for key in with_silent_leg if key in alone] == alone


@given(ranked.filter(lambda keys: len(set(keys)) >= 2), ks)
def test_moving_a_key_up_never_lowers_its_score(keys_: list[str], k: float) -> None:
    unique = list(dict.fromkeys(keys_))
    last = unique[-1]
    promoted = [last, *unique[:-1]]
    before = {f.key: f.score for f in rrf({"v": unique, "w": ["x"]}, k=k)}[last]
    after = {f.key: f.score for f in rrf({"v": promoted, "w": ["x"]}, k=k)}[last]
    assert after >= before


# dbsf_ranking


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


def test_scores_close_together_are_still_spread_from_zero_to_one() -> None:
    """Cosine similarities often lie within a few hundredths of each other: 6 sd far below 1."""
    close = [("a", 0.35), ("b", 0.32), ("c", 0.30)]
    assert dbsf_ranking({"vector": close}).scores == pytest.approx(
        dict(zip("abc", _scaled([0.35, 0.32, 0.30]), strict=True))
    )


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
