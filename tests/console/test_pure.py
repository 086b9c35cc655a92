"""The console's pure pieces: settings from STRATA_CONSOLE_*, budget colours, diffs, dates."""

from __future__ import annotations

import pytest

from strata.console.formatting import at_most, budget_level, budget_percent, line_diff, parse_day
from strata.console.sessions import TOKENS_KEPT, SessionStore
from strata.console.settings import ConsoleSettings
from strata.console.views.operations import replicas


def test_settings_default_to_make_run_and_read_every_variable() -> None:
    assert ConsoleSettings.from_environment({}) == ConsoleSettings()
    assert ConsoleSettings().port == 8080
    settings = ConsoleSettings.from_environment(
        {
            "STRATA_CONSOLE_HOST": "0.0.0.0",
            "STRATA_CONSOLE_PORT": "9000",
            "STRATA_CONSOLE_AUTH": "true",
            "STRATA_CONSOLE_TENANT": "acme",
            "STRATA_MEMORY_TARGET": "10.0.0.1:50051",
            "STRATA_CONSOLE_SECURE_COOKIE": "yes",
        }
    )
    assert (settings.host, settings.port, settings.auth, settings.tenant) == ("0.0.0.0", 9000, True, "acme")
    assert settings.memory_target == "10.0.0.1:50051"  # the CLI's variable when the console's is unset
    assert settings.secure_cookie


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [("PORT", "eighty", "whole number"), ("PORT", "-1", "positive"), ("AUTH", "maybe", "true or false")],
)
def test_bad_settings_name_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"STRATA_CONSOLE_{name}.*{message}"):
        ConsoleSettings.from_environment({f"STRATA_CONSOLE_{name}": value})


def test_budget_colour_turns_at_80_and_95_percent() -> None:
    assert [budget_level(n, 100) for n in (0, 79, 80, 94, 95, 100)] == [
        "ok",
        "ok",
        "warn",
        "warn",
        "full",
        "full",
    ]
    assert budget_percent(150, 100) == 100
    assert budget_percent(1, 0) == 0
    assert at_most(1000, 1000) == "1000+"
    assert at_most(999, 1000) == "999"


def test_line_diff_marks_both_sides() -> None:
    kinds = [(line.kind, line.text) for line in line_diff("a\nb", "a\nc", "stored", "mine")]
    assert ("del", "-b") in kinds
    assert ("add", "+c") in kinds
    assert line_diff("same", "same", "x", "y") == []


def test_dates_are_days_and_bad_ones_say_how_to_write_them() -> None:
    start, end = parse_day("2026-12-01"), parse_day("2026-12-01", end=True)
    assert start is not None
    assert end is not None
    assert end.seconds - start.seconds == 86399
    assert parse_day("  ") is None
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_day("01/12/2026")


def test_replicas_of_a_target() -> None:
    assert replicas("ipv4:127.0.0.1:1,127.0.0.1:2") == ["127.0.0.1:1", "127.0.0.1:2"]
    assert replicas("localhost:50051") == ["localhost:50051"]


def test_form_tokens_are_one_time_and_only_the_sessions_own() -> None:
    store = SessionStore(ttl_seconds=60)
    mine, other = store.open(None), store.open(None)
    token = mine.issue_token()
    assert not other.consume_token(token)
    assert mine.consume_token(token)
    assert not mine.consume_token(token)  # replayed
    assert not mine.consume_token("")
    first = mine.issue_token()
    for _ in range(TOKENS_KEPT):
        mine.issue_token()
    assert not mine.consume_token(first)  # lapsed: older than the last TOKENS_KEPT pages


def test_sessions_expire_and_anonymous_ones_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(ttl_seconds=0.0)
    expired = store.open(None)
    assert store.get(expired.id) is None
    assert store.get(None) is None
    monkeypatch.setattr("strata.console.sessions.MAX_SESSIONS", 3)
    store = SessionStore(ttl_seconds=60)
    opened = [store.open(None) for _ in range(5)]
    assert [store.get(s.id) is not None for s in opened] == [False, False, True, True, True]
