"""Stored times are integer microseconds; every one the API accepts (years 1 to 9999, to the
microsecond) becomes an exact ``datetime`` and is shown by the search tools in every IANA zone,
without rounding into year 10000 (issue 25: one such stamp made an agent's searches INTERNAL for good)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import available_timezones

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_memory.domain.tools.search_tools import Found, archival_results, recall_results
from strata_memory.store.records import EPOCH, to_datetime
from tests.memory.operations.test_search import FIRST_US, LAST_US

ZONES = sorted(available_timezones())
EDGES = (FIRST_US, FIRST_US + 1, -1, 0, 1, LAST_US - 1_000_000, LAST_US - 1, LAST_US)


def shown(us: int, timezone: str) -> tuple[datetime, datetime]:
    """The moment as ``archival_memory_search`` and ``conversation_search`` print it, parsed back."""
    hit = Found("p", to_datetime(us), "text", 0.5, 0.5, 1, None, "hybrid")
    archival = json.loads(archival_results([hit], timezone))[0]["timestamp"]
    recall = json.loads(recall_results([hit], timezone, datetime(2026, 1, 1, tzinfo=UTC)))
    return datetime.fromisoformat(archival), datetime.fromisoformat(recall["results"][0]["timestamp"])


def check(us: int, timezone: str) -> None:
    moment = to_datetime(us)
    assert (moment - EPOCH) // timedelta(microseconds=1) == us  # exact, no float on the way
    assert moment.tzinfo is UTC
    to_second = moment.replace(microsecond=0)
    assert shown(us, timezone) == (to_second, to_second)


@pytest.mark.parametrize("timezone", ZONES)
def test_the_edges_of_the_accepted_range_show_in_every_zone(timezone: str) -> None:
    for us in EDGES:
        check(us, timezone)


@settings(max_examples=300, deadline=None)
@given(us=st.integers(FIRST_US, LAST_US), timezone=st.sampled_from(ZONES))
def test_every_accepted_moment_shows_in_any_zone(us: int, timezone: str) -> None:
    check(us, timezone)
