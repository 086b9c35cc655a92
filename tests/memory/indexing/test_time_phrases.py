"""Time phrases resolved against a fixed moment: what a message is indexed with, what a query names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from strata_memory.indexing.time_phrases import date_notes, named_period, resolve

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
"""A Monday."""


@pytest.mark.parametrize(
    ("text", "notes"),
    [
        ("I went to a support group yesterday and it was powerful.", "[yesterday: 7 May 2023]"),
        (
            "We went last week, and next month we go camping.",
            "[last week: week of 1 May 2023] [next month: June 2023]",
        ),
        ("I painted that last Saturday.", "[last Saturday: 6 May 2023]"),
        ("We met three years ago in Sweden.", "[three years ago: 2020]"),
        ("Two days ago I ran a charity race.", "[Two days ago: 6 May 2023]"),
    ],
)
def test_relative_phrases_become_the_dates_they_name_from_when_the_message_was_said(
    text: str, notes: str
) -> None:
    assert date_notes(text, SAID) == notes


def test_the_same_words_said_on_another_day_name_another_date() -> None:
    later = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    assert date_notes("I saw her yesterday.", later) == "[yesterday: 31 December 2023]"


def test_prose_words_dateparser_reads_as_dates_and_phrases_naming_the_same_day_add_nothing() -> None:
    assert resolve("We may go now, tonight is fine.", SAID) == []
    assert date_notes("Hey Mel! Good to see you! How have you been?", SAID) == ""


def test_a_query_naming_a_day_or_a_month_with_its_year_names_that_period() -> None:
    assert named_period("What did Mel do on 8 May, 2023?") == (
        datetime(2023, 5, 8, tzinfo=UTC),
        datetime(2023, 5, 9, tzinfo=UTC),
    )
    assert named_period("Where did Caroline go in May 2023?") == (
        datetime(2023, 5, 1, tzinfo=UTC),
        datetime(2023, 6, 1, tzinfo=UTC),
    )
    assert named_period("What happened in February 2024?") == (
        datetime(2024, 2, 1, tzinfo=UTC),
        datetime(2024, 3, 1, tzinfo=UTC),
    )


def day(month: int, number: int, year: int = 2023) -> datetime:
    return datetime(year, month, number, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "period"),
    [
        ("Where was Tim in the week before 16 November 2023?", (day(11, 9), day(11, 16))),
        ("What did she do the day before 9 June 2023?", (day(6, 2), day(6, 9))),
        ("What was shown on the Sunday before October 25, 2022?", (day(10, 18, 2022), day(10, 25, 2022))),
        ("What did he buy the month before May 2023?", (day(3, 31), day(5, 1))),
        ("What did he start the week after 8 May 2023?", (day(5, 9), day(5, 16))),
        ("How long has Tim played the piano, as of December 2023?", (None, day(1, 1, 2024))),
        ("How many tournaments has Nate won by July 10, 2022?", (None, day(7, 11, 2022))),
        ("Where was the picture shared by John on December 1,2023 taken?", (day(12, 1), day(12, 2))),
    ],
)
def test_a_word_right_before_the_named_period_moves_it(
    query: str, period: tuple[datetime | None, datetime]
) -> None:
    assert named_period(query) == period


@pytest.mark.parametrize(
    "query",
    [
        "How long ago was Caroline's 18th birthday?",
        "What did she do the week before?",
        "What did she paint?",
        "Did 2023 people come?",
    ],
)
def test_a_query_naming_no_dated_period_names_none(query: str) -> None:
    assert named_period(query) is None
