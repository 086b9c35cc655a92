"""Page tokens (AIP-158; DESIGN/STYLE: every list is paginated, a negative size is INVALID_ARGUMENT):
opaque, bound to the list and filter they came from, and anything not issued by the service refused."""

from __future__ import annotations

import base64
import json

import pytest

from strata_memory.operations.pagination import (
    DEFAULT_PAGE_SIZE,
    MAX_OFFSET,
    MAX_PAGE_SIZE,
    next_token,
    page_from,
)
from strata_memory.store.records import Page
from strata_serving.errors import InvalidArgument

SCOPE = ("ListBlocks", "agent-1")


def _token(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


def test_sizes() -> None:
    assert (DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_OFFSET) == (50, 1000, 2**53)
    assert page_from(0, "", scope=SCOPE) == Page(0, 50)
    assert page_from(7, "", scope=SCOPE) == Page(0, 7)
    assert page_from(1000, "", scope=SCOPE) == Page(0, 1000)
    assert page_from(1001, "", scope=SCOPE) == Page(0, 1000)  # clamped, not refused


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(InvalidArgument) as caught:
        page_from(-1, "", scope=SCOPE)
    assert caught.value.message == "page_size: must not be negative (got -1)"
    assert caught.value.field_violations == (("page_size", "must not be negative (got -1)"),)


def test_tokens_walk_a_list() -> None:
    first = Page(0, 2)
    token = next_token(first, 2, scope=SCOPE)
    assert token
    assert page_from(2, token, scope=SCOPE) == Page(2, 2)
    second = next_token(Page(2, 2), 2, scope=SCOPE)
    assert page_from(5, second, scope=SCOPE) == Page(4, 5)


def test_the_last_page_has_no_token() -> None:
    assert next_token(Page(0, 2), 1, scope=SCOPE) == ""  # a short page
    assert next_token(Page(0, 2), 2, scope=SCOPE, total=2) == ""  # a full page that ends the list
    assert next_token(Page(0, 2), 2, scope=SCOPE, total=3) != ""
    assert next_token(Page(4, 2), 2, scope=SCOPE, total=6) == ""


def test_a_token_belongs_to_its_list_and_filter() -> None:
    token = next_token(Page(0, 1), 1, scope=SCOPE)
    with pytest.raises(InvalidArgument) as caught:
        page_from(1, token, scope=("ListBlocks", "agent-2"))
    assert caught.value.message == "page_token: belongs to a different list or filter"
    with pytest.raises(InvalidArgument):
        page_from(1, token, scope=("ListAgents", "agent-1"))
    assert page_from(1, token, scope=["ListBlocks", "agent-1"]) == Page(1, 1)


def test_scope_parts_are_compared_as_text() -> None:
    token = next_token(Page(0, 1), 1, scope=("List", 1))
    assert page_from(1, token, scope=("List", "1")) == Page(1, 1)


@pytest.mark.parametrize(
    "token",
    [
        "not base64 !!",
        base64.urlsafe_b64encode(b"not json").decode(),
        _token([1, "x"]),
        _token({"o": "1", "s": "x"}),
        _token({"o": True, "s": "x"}),
        _token({"o": 1.0, "s": "x"}),
        _token({"o": -1, "s": "x"}),
        _token({"o": 2**53 + 1, "s": "x"}),
        _token({"o": 1, "s": 5}),
        _token({"o": 1}),
        "x" * 1025,
        "é",
    ],
)
def test_anything_not_issued_is_refused(token: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        page_from(1, token, scope=SCOPE)
    assert caught.value.message == "page_token: is not a token this service issued"


def test_the_largest_offset_is_accepted() -> None:
    scope_digest = json.loads(base64.urlsafe_b64decode(next_token(Page(0, 1), 1, scope=SCOPE)))["s"]
    assert page_from(1, _token({"o": 2**53, "s": scope_digest}), scope=SCOPE) == Page(2**53, 1)
    assert page_from(1, _token({"o": 0, "s": scope_digest}), scope=SCOPE) == Page(0, 1)
