"""The time range a recall search takes from the period its query names, and when it takes none."""

from __future__ import annotations

from datetime import UTC, datetime

from strata_memory.operations.search import QUERY_PERIOD_AFTER, SearchWindow, _within_named_period

JULY = datetime(2023, 7, 1, tzinfo=UTC)
AUGUST = datetime(2023, 8, 1, tzinfo=UTC)


async def test_a_named_month_becomes_the_range_from_its_start_to_a_month_past_its_end() -> None:
    window = await _within_named_period(SearchWindow("Where did we go camping in July 2023?"))
    assert (window.start, window.end) == (JULY, AUGUST + QUERY_PERIOD_AFTER)


async def test_a_callers_start_or_end_wins_over_the_named_period() -> None:
    for given in (
        SearchWindow("camping in July 2023", start=AUGUST),
        SearchWindow("camping in July 2023", end=JULY),
    ):
        assert await _within_named_period(given) == given


async def test_as_of_a_month_leaves_the_start_open() -> None:
    window = await _within_named_period(SearchWindow("How long has Tim played, as of July 2023?"))
    assert (window.start, window.end) == (None, AUGUST + QUERY_PERIOD_AFTER)


async def test_a_query_naming_no_period_is_searched_as_it_came() -> None:
    for query in ("When did Caroline go camping?", "How long ago was the trip?", "x" * 100_000):
        assert await _within_named_period(SearchWindow(query)) == SearchWindow(query)
