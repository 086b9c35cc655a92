"""The external-memory tools' arguments and results (DESIGN.md "Memory tools", "Archival and recall").

archival_memory_insert(content, tags=[]); archival_memory_search(query, tags=[], tag_match_mode="any"|"all",
top_k=5, start_datetime, end_datetime); conversation_search(query, roles=[], limit=5, start_date,
end_date). Date bounds are inclusive, a date alone covers its day, a bound without an offset is in
the agent's timezone; results carry id/timestamp/content/tags and relevance (score, rrf_score, vector_rank,
fts_rank absent when a leg missed the hit, search_mode).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from strata_memory.domain.errors import ToolArgumentError
from strata_memory.domain.tools.search_tools import (
    DEFAULT_RESULTS,
    MAX_RESULTS,
    ROLES,
    Found,
    archival_results,
    in_utc,
    parse_archival_insert,
    parse_archival_search,
    parse_bound,
    parse_recall_search,
    recall_results,
)
from strata_memory.limits import MAX_FILTER_TAGS, MAX_TAG_CHARS

PARIS = "Europe/Paris"  # UTC+1 in January, UTC+2 in July
NEW_YORK = "America/New_York"  # UTC-5 in January


def _refused(call: Any, *args: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as caught:
        call(*args)
    assert caught.value.reason == "INVALID_TOOL_ARGUMENTS"
    return caught.value


SCORES = {"score": 0.612042, "rrf_score": 0.032787}  # _hit's, rounded to 6 places
BOTH_LEGS = SCORES | {"search_mode": "hybrid", "vector_rank": 1, "fts_rank": 2}


def _hit(**changes: Any) -> Found:
    values: dict[str, Any] = {
        "id": "p-1",
        "created_at": datetime(2026, 1, 15, 9, 30, 0, tzinfo=UTC),
        "content": "Bob likes tea",
        "rrf_score": 0.0327868852,
        "score": 0.6120418,
        "vector_rank": 1,
        "fts_rank": 2,
        "search_mode": "hybrid",
    }
    return Found(**(values | changes))


# --- contract values --------------------------------------------------------------------------


def test_contract_defaults_and_roles() -> None:
    assert DEFAULT_RESULTS == 5  # top_k=5, limit=5
    assert MAX_RESULTS == 100
    assert ROLES == ("user", "assistant", "tool", "system")


# --- archival_memory_insert --------------------------------------------------------------------


def test_insert_keeps_content_and_cleans_tags() -> None:
    parsed = parse_archival_insert({"content": "Met Bob", "tags": [" work ", "work", "", "  ", "bob"]})
    assert parsed.content == "Met Bob"
    assert parsed.tags == ("work", "bob")  # stripped, blanks dropped, first occurrence kept


def test_insert_from_json_text_and_a_lone_tag() -> None:
    parsed = parse_archival_insert('{"content": "a\\r\\nb", "tags": "solo"}')
    assert parsed.content == "a\nb"
    assert parsed.tags == ("solo",)


def test_insert_without_tags_has_none() -> None:
    assert parse_archival_insert({"content": "x"}).tags == ()


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_insert_refuses_blank_content(content: str) -> None:
    error = _refused(parse_archival_insert, {"content": content})
    assert error.message == "archival_memory_insert: 'content' must not be empty."


def test_insert_requires_content() -> None:
    error = _refused(parse_archival_insert, {"tags": ["a"]})
    assert error.message == "archival_memory_insert: 'content' is required."


def test_insert_refuses_unknown_arguments() -> None:
    error = _refused(parse_archival_insert, {"content": "x", "tag": "a"})
    assert error.message.startswith("archival_memory_insert got unexpected argument(s) 'tag'")
    assert "its arguments are: content, tags." in error.message


# --- archival_memory_search --------------------------------------------------------------------


def test_search_defaults() -> None:
    query = parse_archival_search({}, "UTC")
    assert (query.query, query.tags, query.match_all, query.top_k) == ("", (), False, 5)
    assert (query.start, query.end) == (None, None)


def test_search_takes_every_argument() -> None:
    query = parse_archival_search(
        {
            "query": "tea",
            "tags": ["a", "b"],
            "tag_match_mode": "all",
            "top_k": 7,
            "start_datetime": "2026-01-01T10:00:00+00:00",
            "end_datetime": "2026-01-02T10:00:00+00:00",
        },
        "UTC",
    )
    assert (query.query, query.tags, query.match_all, query.top_k) == ("tea", ("a", "b"), True, 7)
    assert query.start == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert query.end == datetime(2026, 1, 2, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("mode", "match_all"), [("any", False), ("ANY", False), ("All", True), (None, False)]
)
def test_tag_match_mode_is_case_insensitive(mode: str | None, match_all: bool) -> None:
    assert parse_archival_search({"tag_match_mode": mode}, "UTC").match_all is match_all


@pytest.mark.parametrize("mode", ["both", "al", "any "])
def test_tag_match_mode_must_be_any_or_all(mode: str) -> None:
    error = _refused(parse_archival_search, {"tag_match_mode": mode}, "UTC")
    assert error.message == 'archival_memory_search: \'tag_match_mode\' must be "any" or "all".'


def test_an_empty_tag_match_mode_is_the_default() -> None:
    assert parse_archival_search({"tag_match_mode": ""}, "UTC").match_all is False


@pytest.mark.parametrize("top_k", [1, 5, 100, 3.0])
def test_top_k_within_range(top_k: float) -> None:
    assert parse_archival_search({"top_k": top_k}, "UTC").top_k == int(top_k)


@pytest.mark.parametrize("top_k", [0, -1, 101])
def test_top_k_out_of_range(top_k: int) -> None:
    error = _refused(parse_archival_search, {"top_k": top_k}, "UTC")
    assert error.message == f"archival_memory_search: 'top_k' must be between 1 and 100, got {top_k}."


def test_filter_tags_at_the_limits_are_kept() -> None:
    tags = [f"t{i}" for i in range(MAX_FILTER_TAGS - 1)] + ["x" * MAX_TAG_CHARS]
    assert parse_archival_search({"tags": tags}, "UTC").tags == tuple(tags)


def test_too_many_filter_tags() -> None:
    tags = [f"t{i}" for i in range(MAX_FILTER_TAGS + 1)]
    error = _refused(parse_archival_search, {"tags": tags}, "UTC")
    assert error.message == "archival_memory_search: 'tags' has 65 tags; at most 64."
    assert error.field_violations == (("tags", "at most 64 tags"),)


@pytest.mark.parametrize("tag", ["", "x" * (MAX_TAG_CHARS + 1)])
def test_filter_tag_length(tag: str) -> None:
    error = _refused(parse_archival_search, {"tags": ["ok", tag]}, "UTC")
    assert error.message == f"archival_memory_search: each tag must have 1 to 100 characters, got {len(tag)}."
    assert error.field_violations == (("tags", "each tag 1 to 100 characters"),)


# --- conversation_search ---------------------------------------------------------------------


def test_recall_defaults() -> None:
    query = parse_recall_search({}, "UTC")
    assert (query.query, query.roles, query.limit, query.start, query.end) == ("", (), 5, None, None)


def test_recall_roles_are_distinct_in_order() -> None:
    query = parse_recall_search({"query": "tea", "roles": ["user", "tool", "user"], "limit": 9}, "UTC")
    assert (query.query, query.roles, query.limit) == ("tea", ("user", "tool"), 9)


def test_recall_takes_every_role() -> None:
    assert parse_recall_search({"roles": list(ROLES)}, "UTC").roles == ROLES


def test_recall_refuses_unknown_roles() -> None:
    error = _refused(parse_recall_search, {"roles": ["user", "bot"]}, "UTC")
    assert (
        error.message
        == "conversation_search: unknown role(s) ['bot']; roles are user, assistant, tool, system."
    )


@pytest.mark.parametrize("limit", [0, 101])
def test_recall_limit_range(limit: int) -> None:
    error = _refused(parse_recall_search, {"limit": limit}, "UTC")
    assert error.message == f"conversation_search: 'limit' must be between 1 and 100, got {limit}."


def test_recall_date_only_bounds_cover_whole_days_in_the_agents_zone() -> None:
    query = parse_recall_search({"start_date": "2026-01-15", "end_date": "2026-01-16"}, PARIS)
    assert query.start == datetime(2026, 1, 14, 23, 0, tzinfo=UTC)  # midnight in Paris (UTC+1)
    assert query.end == datetime(2026, 1, 16, 22, 59, 59, 999999, tzinfo=UTC)


def test_recall_range_reversed_is_refused() -> None:
    error = _refused(parse_recall_search, {"start_date": "2026-01-16", "end_date": "2026-01-15"}, "UTC")
    assert error.message == (
        "conversation_search: 'start_date' (2026-01-16) is after 'end_date' (2026-01-15)."
    )


def test_recall_same_day_range_is_one_day() -> None:
    query = parse_recall_search({"start_date": "2026-01-15", "end_date": "2026-01-15"}, "UTC")
    assert query.start == datetime(2026, 1, 15, tzinfo=UTC)
    assert query.end == datetime(2026, 1, 15, 23, 59, 59, 999999, tzinfo=UTC)


def test_only_one_bound() -> None:
    only_start = parse_recall_search({"start_date": "2026-01-15"}, "UTC")
    assert (only_start.start, only_start.end) == (datetime(2026, 1, 15, tzinfo=UTC), None)
    only_end = parse_archival_search({"end_datetime": "2026-01-15"}, "UTC")
    assert (only_end.start, only_end.end) == (None, datetime(2026, 1, 15, 23, 59, 59, 999999, tzinfo=UTC))


def test_equal_instants_are_a_valid_range() -> None:
    moment = "2026-01-15T08:00:00+00:00"
    query = parse_archival_search({"start_datetime": moment, "end_datetime": moment}, "UTC")
    assert query.start == query.end == datetime(2026, 1, 15, 8, tzinfo=UTC)


# --- bounds ------------------------------------------------------------------------------------


def test_bound_without_offset_is_in_the_agents_zone() -> None:
    bound = parse_bound("2026-01-15T08:00", name="start_date", end=False, timezone=NEW_YORK)
    assert bound == datetime(2026, 1, 15, 13, 0, tzinfo=UTC)
    assert bound.tzinfo is UTC


def test_bound_with_an_offset_keeps_it() -> None:
    bound = parse_bound("2026-01-15T08:00:00+02:00", name="x", end=True, timezone=NEW_YORK)
    assert bound == datetime(2026, 1, 15, 6, 0, tzinfo=UTC)
    assert bound.utcoffset() == timedelta(0)


def test_date_alone_starts_or_ends_its_day() -> None:
    assert parse_bound(" 2026-07-01 ", name="x", end=False, timezone=PARIS) == datetime(
        2026, 6, 30, 22, tzinfo=UTC
    )
    assert parse_bound("2026-07-01", name="x", end=True, timezone=PARIS) == datetime(
        2026, 7, 1, 21, 59, 59, 999999, tzinfo=UTC
    )


def test_a_datetime_at_midnight_is_not_widened() -> None:
    # only a bare date (10 characters) spans its day; an explicit midnight is that instant
    assert parse_bound("2026-01-15T00:00", name="x", end=True, timezone="UTC") == datetime(
        2026, 1, 15, tzinfo=UTC
    )


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "15/01/2026"])
def test_bad_bound_names_the_format(text: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        parse_bound(text, name="start_datetime", end=False, timezone="UTC")
    assert caught.value.message == (
        f"Invalid start_datetime format: {text}. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)."
    )


def test_bound_in_a_search_names_its_argument() -> None:
    error = _refused(parse_archival_search, {"end_datetime": "soon"}, "UTC")
    assert error.message.startswith("Invalid end_datetime format: soon.")


def test_in_utc_clamps_past_either_end() -> None:
    east = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))  # begins before year 1 in UTC
    west = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # ends after 9999
    assert in_utc(east) == datetime.min.replace(tzinfo=UTC)
    assert in_utc(west) == datetime.max.replace(tzinfo=UTC)
    assert in_utc(datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))) == datetime(
        2026, 1, 1, tzinfo=UTC
    )


def test_year_one_date_east_of_utc_means_from_the_beginning() -> None:
    bound = parse_bound("0001-01-01", name="start_date", end=False, timezone="Asia/Tokyo")
    assert bound == datetime.min.replace(tzinfo=UTC)


# --- results -----------------------------------------------------------------------------------


def test_archival_results_shape() -> None:
    text = archival_results([_hit(tags=("tea", "bob"))], PARIS)
    assert json.loads(text) == [
        {
            "id": "p-1",
            "timestamp": "2026-01-15T10:30:00+01:00",
            "content": "Bob likes tea",
            "tags": ["tea", "bob"],
            "relevance": BOTH_LEGS,
        }
    ]


def test_relevance_omits_a_leg_that_missed() -> None:
    only_fts = json.loads(archival_results([_hit(vector_rank=None, search_mode="fts")], "UTC"))[0]
    assert only_fts["relevance"] == SCORES | {"search_mode": "fts", "fts_rank": 2}
    only_vector = json.loads(archival_results([_hit(fts_rank=None)], "UTC"))[0]
    assert only_vector["relevance"] == SCORES | {"search_mode": "hybrid", "vector_rank": 1}
    ranked_first = json.loads(archival_results([_hit(vector_rank=0, fts_rank=0)], "UTC"))[0]
    assert ranked_first["relevance"]["vector_rank"] == 0
    assert ranked_first["relevance"]["fts_rank"] == 0


def test_results_keep_non_ascii_text_as_written() -> None:
    text = archival_results([_hit(content="thé → café")], "UTC")
    assert "thé → café" in text
    recall = recall_results(
        [_hit(content="thé", role="user")], "UTC", datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
    )
    assert '"thé"' in recall


def test_archival_results_empty() -> None:
    assert archival_results([], "UTC") == "[]"


def test_recall_results_shape() -> None:
    now = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
    text = recall_results(
        [_hit(role="assistant"), _hit(id="m-2", role="user", rrf_score=0.01)], NEW_YORK, now
    )
    decoded = json.loads(text)
    assert decoded["message"] == "Showing 2 results:"
    assert decoded["results"][0] == {
        "timestamp": "2026-01-15T04:30:00-05:00",
        "time_ago": "2h ago",
        "role": "assistant",
        "content": "Bob likes tea",
        "relevance": BOTH_LEGS,
    }
    assert decoded["results"][1]["role"] == "user"


def test_recall_results_empty() -> None:
    assert json.loads(recall_results([], "UTC", datetime.now(UTC))) == {
        "message": "No results found.",
        "results": [],
    }


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "0s ago"),  # clock skew: never "in the future"
        (0, "0s ago"),
        (59, "59s ago"),
        (60, "1m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (86399, "23h ago"),
        (86400, "1d ago"),
        (3 * 86400 + 7200, "3d ago"),
    ],
)
def test_time_ago(seconds: int, shown: str) -> None:
    created = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
    now = created + timedelta(seconds=seconds)
    assert (
        json.loads(recall_results([_hit(created_at=created)], "UTC", now))["results"][0]["time_ago"] == shown
    )


def test_a_time_the_zone_cannot_show_is_shown_in_utc() -> None:
    earliest = datetime(1, 1, 1, 2, 0, tzinfo=UTC)  # 5 hours west of this is before year 1
    shown = json.loads(archival_results([_hit(created_at=earliest)], NEW_YORK))[0]["timestamp"]
    assert shown == "0001-01-01T02:00:00+00:00"


def test_timestamps_are_whole_seconds() -> None:
    moment = datetime(2026, 1, 15, 9, 30, 5, 987654, tzinfo=UTC)
    assert (
        json.loads(archival_results([_hit(created_at=moment)], "UTC"))[0]["timestamp"]
        == "2026-01-15T09:30:05+00:00"
    )
