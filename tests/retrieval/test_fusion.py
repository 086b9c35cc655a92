"""rrf(): the documented formula, ordering and tie-breaking, as examples and as properties."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_retrieval.fusion import rrf, rrf_ranking

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
